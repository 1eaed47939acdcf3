import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhooks (src/webhooks/event-service.ts): an attempt keeps the first bytes of the receiver's
 * answer, so the account holder sees why a delivery failed ("what did my endpoint say?").
 * Null for attempts recorded before this migration and for attempts that got no answer. The
 * event's page lists its attempts: an index by event.
 */
export const m0190_webhook_attempt_responses: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table webhook_attempts add column response_body text`.execute(db)
    await sql`create index webhook_attempts_event on webhook_attempts(event_id, id)`.execute(db)
  },
}
