import { type Kysely, type Migration, sql } from 'kysely'

/**
 * When each API key last authenticated (the dashboard keys page's "last used"). Written in
 * batches by AuthService's last-used flush, never per request, so it lags by up to a flush
 * interval. Null: not used since this column exists.
 */
export const m0090_api_keys_last_used: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table api_keys add column last_used_at timestamptz null`.execute(db)
  },
}
