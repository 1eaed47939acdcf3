import { type Kysely, type Migration, sql } from 'kysely'

/**
 * The transfer API: native value transfers beside the token transfers, and the
 * indexes that let `/v1/transfers` and `alchemy_getAssetTransfers` page by keyset (never OFFSET)
 * for one address in either direction.
 *
 * native_transfers holds every top-level transaction (category 'external', trace_index 0, value
 * possibly 0: Alchemy's `excludeZeroValue` decides at read time) and every call frame inside a
 * transaction that moved value (category 'internal', trace_index 1.. in depth-first order,
 * trace_path the frame's position in the call tree, e.g. "0.1"). to_address is null for a
 * contract creation whose address the upstream did not give.
 */
export const m0100_transfers: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table native_transfers (
        network text not null,
        block_number bigint not null,
        tx_index integer not null,
        trace_index integer not null,
        block_hash text not null,
        block_timestamp bigint not null,
        tx_hash text not null,
        category text not null,
        trace_path text,
        from_address text not null,
        to_address text,
        value numeric(78, 0) not null,
        primary key (network, block_number, tx_index, trace_index)
      )`.execute(db)
    await sql`create index native_transfers_from on native_transfers(network, from_address, block_number, tx_index, trace_index)`.execute(
      db,
    )
    await sql`create index native_transfers_to on native_transfers(network, to_address, block_number, tx_index, trace_index)`.execute(
      db,
    )
    await sql`create index token_transfers_from on token_transfers(network, from_address, block_number, log_index, batch_index)`.execute(
      db,
    )
    await sql`create index token_transfers_to on token_transfers(network, to_address, block_number, log_index, batch_index)`.execute(
      db,
    )
  },
}
