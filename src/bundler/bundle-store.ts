import { type Generated, type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash, Hex } from '../types.ts'

/**
 * SQL of the bundle transactions (migrations 0050_bundler, 0051_bundler_reputation). States:
 * 'submitted' (in flight, the one to watch), 'replaced' (superseded by a fee bump at the same
 * executor nonce; it may still be mined), 'included', 'failed' (reverted), 'dropped'.
 */

export interface BundlerBundlesTable {
  network: string
  tx_hash: Hash
  entry_point: Address
  executor: Address
  executor_nonce: string
  raw_tx: Hex
  state: string
  block_number: string | null
  block_hash: Hash | null
  sent_block: string | null
  reason: string | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

type Db = Kysely<Database>

export type BundleState = 'submitted' | 'replaced' | 'included' | 'failed' | 'dropped'

export interface StoredBundle {
  txHash: Hash
  entryPoint: Address
  executor: Address
  executorNonce: bigint
  rawTx: Hex
  /** The head when it was last (re)sent; null for rows written before migration 0051. */
  sentBlock: bigint | null
  /** When it was last (re)sent. */
  updatedAt: Date
}

const COLUMNS = [
  'tx_hash',
  'entry_point',
  'executor',
  'executor_nonce',
  'raw_tx',
  'sent_block',
  'updated_at',
] as const

function toBundle(
  r: Pick<
    BundlerBundlesTable,
    'tx_hash' | 'entry_point' | 'executor' | 'executor_nonce' | 'raw_tx' | 'sent_block'
  > & {
    updated_at: Date
  },
): StoredBundle {
  return {
    txHash: r.tx_hash,
    entryPoint: r.entry_point,
    executor: r.executor,
    executorNonce: BigInt(r.executor_nonce),
    rawTx: r.raw_tx,
    sentBlock: r.sent_block === null ? null : BigInt(r.sent_block),
    updatedAt: r.updated_at,
  }
}

export async function insertBundle(
  trx: Db,
  network: string,
  b: Omit<StoredBundle, 'updatedAt'>,
): Promise<void> {
  await trx
    .insertInto('bundler_bundles')
    .values({
      network,
      tx_hash: b.txHash,
      entry_point: b.entryPoint,
      executor: b.executor,
      executor_nonce: b.executorNonce.toString(),
      raw_tx: b.rawTx,
      sent_block: b.sentBlock === null ? null : b.sentBlock.toString(),
      state: 'submitted',
    })
    .execute()
}

export async function openBundles(db: Db, network: string): Promise<StoredBundle[]> {
  const rows = await db
    .selectFrom('bundler_bundles')
    .select(COLUMNS)
    .where('network', '=', network)
    .where('state', '=', 'submitted')
    .orderBy('created_at')
    .execute()
  return rows.map(toBundle)
}

/** Transactions `b` replaced (same executor and nonce), newest first: any of them may be mined. */
export async function replacedBy(db: Db, network: string, b: StoredBundle): Promise<StoredBundle[]> {
  const rows = await db
    .selectFrom('bundler_bundles')
    .select(COLUMNS)
    .where('network', '=', network)
    .where('executor', '=', b.executor)
    .where('executor_nonce', '=', b.executorNonce.toString())
    .where('state', '=', 'replaced')
    .orderBy('created_at', 'desc')
    .execute()
  return rows.map(toBundle)
}

export async function setBundleState(
  db: Db,
  network: string,
  txHash: Hash,
  state: BundleState,
  extra: {
    blockNumber?: bigint | null
    blockHash?: Hash | null
    reason?: string | null
    sentBlock?: bigint
  } = {},
): Promise<void> {
  await db
    .updateTable('bundler_bundles')
    .set({
      state,
      updated_at: sql`now()`,
      ...(extra.blockNumber !== undefined
        ? { block_number: extra.blockNumber === null ? null : extra.blockNumber.toString() }
        : {}),
      ...(extra.blockHash !== undefined ? { block_hash: extra.blockHash } : {}),
      ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
      ...(extra.sentBlock !== undefined ? { sent_block: extra.sentBlock.toString() } : {}),
    })
    .where('network', '=', network)
    .where('tx_hash', '=', txHash)
    .execute()
}

export interface MinedBundle {
  txHash: Hash
  blockNumber: bigint
  blockHash: Hash
}

/** Bundles mined at or above `fromBlock`: still young enough to be reorged out. */
export async function minedSince(db: Db, network: string, fromBlock: bigint): Promise<MinedBundle[]> {
  const rows = await db
    .selectFrom('bundler_bundles')
    .select(['tx_hash', 'block_number', 'block_hash'])
    .where('network', '=', network)
    .where('state', '=', 'included')
    .where('block_number', '>=', fromBlock.toString())
    .where('block_hash', 'is not', null)
    .execute()
  // The query keeps only rows with a block hash; the check narrows the column's type.
  return rows.flatMap((r) =>
    r.block_hash === null
      ? []
      : [{ txHash: r.tx_hash, blockNumber: BigInt(r.block_number ?? '0'), blockHash: r.block_hash }],
  )
}
