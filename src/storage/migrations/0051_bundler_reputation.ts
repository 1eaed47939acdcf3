import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Bundler, second step (src/bundler/bundle-store.ts, reputation-store.ts): where a bundle was sent
 * and mined (stuck-transaction fee bumps, reorg detection), and ERC-7562 entity reputation.
 */
export const m0051_bundler_reputation: Migration = {
  async up(db: Kysely<unknown>) {
    // The head when the transaction was (re)sent: "not mined after N blocks" is counted from it.
    await sql`alter table bundler_bundles add column sent_block bigint`.execute(db)
    // The block it was mined in, compared with the canonical chain to notice a reorg.
    await sql`alter table bundler_bundles add column block_hash text`.execute(db)
    // Mined bundles still young enough to be reorged out.
    await sql`create index bundler_bundles_mined on bundler_bundles(network, block_number) where state = 'included'`.execute(
      db,
    )
    // A replaced transaction shares its executor nonce with the one that replaced it.
    await sql`create index bundler_bundles_nonce on bundler_bundles(network, executor, executor_nonce)`.execute(
      db,
    )
    // Live ops per factory (ERC-7562 UREP-020 / GREP-020 count them; paymasters have an index already).
    await sql`create index bundler_user_ops_factory on bundler_user_ops(network, factory) where state in ('pending', 'submitted')`.execute(
      db,
    )
    // ERC-7562 reputation per entity (factory, paymaster; aggregators are not supported) and network.
    // Counters decay hourly (x 23/24); `decayed_at` is when the last decay step was applied.
    await sql`
      create table bundler_reputation (
        network text not null,
        address text not null,
        ops_seen bigint not null default 0,
        ops_included bigint not null default 0,
        decayed_at timestamptz not null default now(),
        primary key (network, address)
      )`.execute(db)
  },
}
