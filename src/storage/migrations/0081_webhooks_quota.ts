import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhook delivery quota (src/webhooks/quota.ts): events produced per account per UTC day.
 * Events past the quota keep status `over_quota` (a new value of webhook_events.status).
 */
export const m0081_webhooks_quota: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table webhook_quota_usage (
        account_id text not null,
        day date not null,
        used bigint not null default 0,
        primary key (account_id, day)
      )`.execute(db)
  },
}
