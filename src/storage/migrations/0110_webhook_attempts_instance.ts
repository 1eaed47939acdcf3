import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhooks (src/webhooks/cross-wake.ts instanceId): every instance and cluster worker
 * delivers, and each attempt records which one made it (`instance`: HALYARD_INSTANCE_ID, or
 * hostname:pid). Null for attempts recorded before this migration.
 */
export const m0110_webhook_attempts_instance: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table webhook_attempts add column instance text`.execute(db)
  },
}
