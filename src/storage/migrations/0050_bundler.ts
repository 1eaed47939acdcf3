import { type Kysely, type Migration, sql } from 'kysely'

/** ERC-4337 bundler (src/bundler/mempool-store.ts): the durable mempool and the bundles sent. */
export const m0050_bundler: Migration = {
  async up(db: Kysely<unknown>) {
    // One row per UserOperation ever accepted; the row is written before the hash is returned.
    // `user_op` is the op as the client sent it (ERC-7769 wire shape of its version).
    await sql`
      create table bundler_user_ops (
        network text not null,
        hash text not null,
        entry_point text not null,
        version text not null,
        sender text not null,
        nonce numeric(78, 0) not null,
        user_op jsonb not null,
        max_fee_per_gas numeric(78, 0) not null,
        max_priority_fee_per_gas numeric(78, 0) not null,
        paymaster text,
        factory text,
        prefund numeric(78, 0) not null,
        valid_until bigint,
        sender_staked boolean not null default false,
        state text not null,
        reason text,
        bundle_tx text,
        block_number bigint,
        block_hash text,
        attempts integer not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (network, hash)
      )`.execute(db)
    // One live op per sender and full nonce (key and sequence): a second is a replacement.
    await sql`
      create unique index bundler_user_ops_live on bundler_user_ops(network, entry_point, sender, nonce)
      where state in ('pending', 'submitted')`.execute(db)
    // The builder's scan: pending ops of a network by fee.
    await sql`
      create index bundler_user_ops_pending on bundler_user_ops(network, max_priority_fee_per_gas desc, created_at)
      where state = 'pending'`.execute(db)
    await sql`create index bundler_user_ops_sender on bundler_user_ops(network, sender) where state in ('pending', 'submitted')`.execute(
      db,
    )
    await sql`create index bundler_user_ops_paymaster on bundler_user_ops(network, paymaster) where state in ('pending', 'submitted')`.execute(
      db,
    )
    await sql`create index bundler_user_ops_bundle on bundler_user_ops(network, bundle_tx)`.execute(db)
    // A bundle is recorded, with its signed transaction, before it is broadcast: after a crash
    // the next builder re-sends it or learns it was mined, and never bundles its ops twice.
    await sql`
      create table bundler_bundles (
        network text not null,
        tx_hash text not null,
        entry_point text not null,
        executor text not null,
        executor_nonce bigint not null,
        raw_tx text not null,
        state text not null,
        block_number bigint,
        reason text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        primary key (network, tx_hash)
      )`.execute(db)
    await sql`create index bundler_bundles_open on bundler_bundles(network) where state = 'submitted'`.execute(
      db,
    )
  },
}
