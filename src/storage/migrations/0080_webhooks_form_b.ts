import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhooks (src/webhooks/form-b.ts, src/webhooks/quota.ts):
 *  - `format`: the delivery form each webhook uses, 'A' (the default, what every
 *    existing webhook keeps) or 'B' (`sha256=` signature over the raw body, upper-case type
 *    header, camelCase envelope, the 7-retry schedule, never paused).
 */
export const m0080_webhooks_form_b: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table webhooks add column format text not null default 'A'`.execute(db)
  },
}
