import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhooks (src/webhooks/config.ts typesOf): one webhook may monitor several
 * event types. `event_types` lists them all; `event_type` stays the first of them (what older
 * readers and the API's `event_type` show). Empty for rows created before this migration,
 * which monitor their `event_type` alone.
 */
export const m0111_webhooks_event_types: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table webhooks add column event_types text[] not null default '{}'`.execute(db)
  },
}
