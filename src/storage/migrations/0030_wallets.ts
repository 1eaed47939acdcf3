import { type Kysely, type Migration, sql } from 'kysely'

/** Smart wallets (src/wallets/store.ts): wallets, which keys created them, deployments seen on chain. */
export const m0030_wallets: Migration = {
  async up(db: Kysely<unknown>) {
    // One row per counterfactual address per network, whoever asked for it first.
    await sql`
      create table wallets (
        network text not null,
        address text not null,
        owner text not null,
        salt numeric(78, 0) not null,
        factory text not null,
        created_at timestamptz not null default now(),
        primary key (network, address)
      )`.execute(db)
    // Wallets are listed per calling key: a key sees the wallets it created.
    await sql`
      create table wallet_keys (
        key_id text not null,
        network text not null,
        address text not null,
        created_at timestamptz not null default now(),
        primary key (key_id, network, address)
      )`.execute(db)
    await sql`create index wallet_keys_listing on wallet_keys(key_id, created_at, network, address)`.execute(
      db,
    )
    // First deployment seen for an address, written by the indexer consumer inside the indexer's
    // transaction (durable) and deleted again when its block is rolled back (reorg-safe).
    await sql`
      create table wallet_deployments (
        network text not null,
        address text not null,
        tx_hash text,
        block_number bigint not null,
        block_hash text,
        deployed_at timestamptz,
        source text not null,
        primary key (network, address)
      )`.execute(db)
    await sql`create index wallet_deployments_block on wallet_deployments(network, block_number)`.execute(db)
  },
}
