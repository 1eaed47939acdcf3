import { type Kysely, type Migration, sql } from 'kysely'

/**
 * History scans (src/indexer/history-scan.ts): the instance running a scan claims it until a
 * time it extends with every window, so instances sharing the database scan an address once;
 * another takes an unfinished scan over only once the claim has lapsed (its holder stopped).
 */
export const m0230_history_scan_claims: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table history_scans add column claimed_by text`.execute(db)
    await sql`alter table history_scans add column claimed_until timestamptz`.execute(db)
  },
}
