import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Indexer history (src/indexer/history-store.ts): from which block each network's index is
 * complete, and the targeted scans of addresses whose history is older than that.
 */
export const m0150_indexer_history: Migration = {
  async up(db: Kysely<unknown>) {
    // Written once, when the follower takes its first position (or on upgrade, from what the
    // index holds): the first block the index holds every transfer of.
    await sql`
      create table indexer_history (
        network text primary key,
        complete_from bigint not null,
        recorded_at timestamptz not null default now()
      )`.execute(db)
    // One row per (network, address) asked about: blocks [0, end_block) are scanned window by
    // window; next_block is where the next window starts (a resumed scan goes on from there).
    await sql`
      create table history_scans (
        network text not null,
        address text not null,
        end_block bigint not null,
        next_block bigint not null,
        done boolean not null default false,
        requested_by text not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (network, address)
      )`.execute(db)
    await sql`create index history_scans_pending on history_scans (network, created_at) where not done`.execute(
      db,
    )
  },
}
