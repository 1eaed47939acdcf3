import type { Bytes } from '../storage/bytea.ts'
import type { Hash } from '../types.ts'

/** The index tables' rows as kysely sees them (layout: docs/storage.md, migration 0160). */

export interface IndexerCursorsTable {
  network: string
  block_number: string
  block_hash: Hash
  updated_at: Date
}

export interface IndexerBlocksTable {
  network: string
  number: string
  hash: Hash
  parent_hash: Hash | null
}

/**
 * The index tables in their compact layout (migration 0160): addresses and hashes as bytea, the
 * network as its id in `networks`, standard and category as smallints (STANDARD_CODE,
 * CATEGORY_CODE). Reads and writes go through src/storage/bytea.ts.
 */
export interface TokenTransfersTable {
  network_id: number
  block_number: string
  log_index: number
  batch_index: number
  block_timestamp: string
  tx_hash: Bytes
  /** 20, 721 or 1155 (STANDARD_CODE). */
  standard: number
  contract: Bytes
  from_address: Bytes
  to_address: Bytes
  /** 0 on ERC-20 rows, which have none (no null: see migration 0160). */
  token_id: string
  value: string
}

export interface TokenHoldersTable {
  network_id: number
  holder: Bytes
  contract: Bytes
  first_block: string
}

export interface NftBalancesTable {
  network_id: number
  contract: Bytes
  token_id: string
  holder: Bytes
  standard: string
  balance: string
}

/** Native value transfers (migration 0100): 'external' transactions and 'internal' call frames. */
export interface NativeTransfersTable {
  network_id: number
  block_number: string
  tx_index: number
  /** 0 for the transaction itself; 1.. for its value-moving frames, depth first. */
  trace_index: number
  block_timestamp: string
  tx_hash: Bytes
  /** 0 external, 1 internal (CATEGORY_CODE). */
  category: number
  /** The frame's path in the call tree ("0.1"); null for the transaction itself. */
  trace_path: string | null
  from_address: Bytes
  /** null for a contract creation whose address is not known. */
  to_address: Bytes | null
  value: string
}

/** token_transfers.standard codes. */
export const STANDARD_CODE = { ERC20: 20, ERC721: 721, ERC1155: 1155 } as const
/** native_transfers.category codes. */
export const CATEGORY_CODE = { external: 0, internal: 1 } as const

export interface IndexerTables {
  indexer_cursors: IndexerCursorsTable
  indexer_blocks: IndexerBlocksTable
  token_transfers: TokenTransfersTable
  native_transfers: NativeTransfersTable
  token_holders: TokenHoldersTable
  nft_balances: NftBalancesTable
}

declare module '../storage/schema.ts' {
  interface Database extends IndexerTables {}
}
