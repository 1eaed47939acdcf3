import type { Transaction } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { InternalTransfer } from './traces.ts'

/**
 * The contract between the indexer and its in-process consumers (webhook matcher, wallet
 * deployment tracker, …). The indexer calls consumers inside the same database transaction
 * that stores the block and advances its cursor, so a consumer's writes commit atomically with
 * the indexer's: a crash at any point resumes without loss or duplication.
 */

export interface IndexedTransaction {
  hash: Hash
  from: Address
  /** null for contract creation. */
  to: Address | null
  /** For a contract creation: the address it deploys to (from sender and nonce). */
  created?: Address
  value: bigint
  /** Receipt status: true = success. Undefined when the receipt was not fetched. */
  success?: boolean
  /**
   * The receipt's status is 0 (EIP-658): the transaction moved no value. Set by the indexer from
   * the block's receipts; undefined where they were not read.
   */
  reverted?: boolean
  /** Index within the block. */
  index: number
  input: Hex
}

export interface IndexedLog {
  address: Address
  topics: Hex[]
  data: Hex
  txHash: Hash
  logIndex: number
}

export type TokenStandard = 'ERC20' | 'ERC721' | 'ERC1155'

export interface TokenTransfer {
  standard: TokenStandard
  contract: Address
  from: Address
  to: Address
  /** ERC-20 amount; ERC-1155 quantity; 1 for ERC-721. */
  value: bigint
  /** ERC-721 / ERC-1155 token id; null for ERC-20. */
  tokenId: bigint | null
  txHash: Hash
  logIndex: number
  /** Position within a TransferBatch (0 for the others), so (txHash, logIndex, batchIndex) is unique. */
  batchIndex: number
}

/** A block's header as the indexer reads it from the node (chain.ts) and stores it. */
export interface BlockHeader {
  number: bigint
  hash: Hash
  parentHash: Hash
  /** Unix seconds. */
  timestamp: number
  /** From the block header when the node sent it (webhooks' new_block events). */
  gasUsed?: bigint
  transactionCount?: number
}

export interface IndexedBlock extends BlockHeader {
  /** Network slug, e.g. `ethereum-devnet`. */
  network: string
  chainId: number
  /** Every log of the block, in log-index order. */
  logs: IndexedLog[]
  /** Transfers decoded from the logs. */
  transfers: TokenTransfer[]
  /**
   * The block's transactions, when the indexer fetched the full block (always while
   * following the head; range backfill may leave this undefined).
   */
  transactions?: IndexedTransaction[]
  /**
   * Value moved by call frames inside the block's transactions (traces.ts), when the indexer
   * traced the block; undefined when it did not (tracing off or unavailable, or it failed).
   */
  internalTransfers?: readonly InternalTransfer[]
}

export type DbTransaction = Transaction<Database>

export interface BlockConsumer {
  readonly name: string
  /**
   * Whether the consumer needs every block of `network` with its transactions while the
   * indexer catches up (backfill): otherwise a backfill publishes only the blocks that have
   * logs, without `transactions` (one eth_getLogs per range instead of one full block each).
   * Asked once per backfill step.
   */
  needsFullBlocks?(network: string): Promise<boolean>
  /**
   * Optional read-only head start on the newest block, called before the indexer's
   * transaction opens (on another connection, overlapping the index insert); onBlock still
   * follows for the same block, and must not rely on prepare having run or succeeded.
   */
  prepare?(block: IndexedBlock): Promise<void>
  /** Called for each block in order, inside the indexer's transaction; throwing aborts the block. */
  onBlock(trx: DbTransaction, block: IndexedBlock): Promise<void>
  /**
   * Called right after a commit that ran onBlock (synchronously, before waiters on the cursor
   * hear of it): work the consumer wrote is visible to other connections from here on.
   */
  afterCommit?(network: string, cursor: bigint): void
  /** Blocks above `ancestor` were undone by a reorg; called inside the rollback transaction. */
  onRollback(trx: DbTransaction, network: string, ancestor: bigint): Promise<void>
}
