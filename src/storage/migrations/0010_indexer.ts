import { type Kysely, type Migration, sql } from 'kysely'

/** The chain index (src/indexer/store.ts): cursor, recent block hashes, transfers, holdings. */
export const m0010_indexer: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table indexer_cursors (
        network text primary key,
        block_number bigint not null,
        block_hash text not null,
        updated_at timestamptz not null default now()
      )`.execute(db)
    // Recent block hashes for reorg detection; parent_hash is null for blocks learnt from logs.
    await sql`
      create table indexer_blocks (
        network text not null,
        number bigint not null,
        hash text not null,
        parent_hash text,
        primary key (network, number)
      )`.execute(db)
    await sql`
      create table token_transfers (
        network text not null,
        block_number bigint not null,
        log_index integer not null,
        batch_index integer not null,
        block_hash text not null,
        block_timestamp bigint not null,
        tx_hash text not null,
        standard text not null,
        contract text not null,
        from_address text not null,
        to_address text not null,
        token_id numeric(78, 0),
        value numeric(78, 0) not null,
        primary key (network, block_number, log_index, batch_index)
      )`.execute(db)
    // Every (holder, ERC-20 contract) pair ever seen in a transfer: the balances endpoint reads
    // current balances for these at the head. first_block makes rollback exact (see store).
    await sql`
      create table token_holders (
        network text not null,
        holder text not null,
        contract text not null,
        first_block bigint not null,
        primary key (network, holder, contract)
      )`.execute(db)
    // Current NFT holdings, maintained by signed deltas (and undone by negated deltas on reorg).
    await sql`
      create table nft_balances (
        network text not null,
        contract text not null,
        token_id numeric(78, 0) not null,
        holder text not null,
        standard text not null,
        balance numeric(78, 0) not null,
        primary key (network, contract, token_id, holder)
      )`.execute(db)
    await sql`create index nft_balances_holder on nft_balances(network, holder)`.execute(db)
  },
}
