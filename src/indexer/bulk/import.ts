import { setImmediate } from 'node:timers/promises'
import type { Network } from '../../chains/registry.ts'
import { HalyardError, invalidRequest } from '../../errors.ts'
import type { Storage } from '../../storage/database.ts'
import { withSessionLock } from '../../storage/session-lock.ts'
import type { Hash } from '../../types.ts'
import { blockTransfers } from '../indexed-block.ts'
import { nativeTransfersOf } from '../native.ts'
import type { SkippedLog } from '../skipped-logs.ts'
import * as store from '../store.ts'
import type { BulkBlock, BulkSource } from './source.ts'

/** Block hashes kept for finding a reorg's common ancestor (as the follower keeps). */
const KEEP_BLOCKS = 512n
/**
 * Blocks per transaction: small enough that writing one batch overlaps reading the next, large
 * enough that each statement carries thousands of rows (≈ 15,000 at mainnet density).
 */
const DEFAULT_BATCH = 25

export interface ImportOptions {
  storage: Storage
  network: Pick<Network, 'slug' | 'chainId'>
  source: BulkSource
  /** Blocks per database transaction. */
  batchBlocks?: number
  onBatch?: (progress: { to: bigint; blocks: number; transfers: number; native: number }) => void
}

export interface ImportResult {
  /** The blocks written (null when the index was already past the source). */
  from: bigint | null
  to: bigint | null
  blocks: number
  transfers: number
  native: number
  skippedLogs: number
}

/**
 * Writes a bulk source's blocks through the indexer's own store functions (token and native
 * transfers, holders, NFT balances, block hashes), advancing the cursor with each batch in the
 * same transaction, so the index is consistent after every batch and the follower carries on
 * from where the import stopped. The import continues the index: it starts at the cursor's next
 * block (or, without a cursor, at the source's first block), refuses a source that starts above
 * that or whose blocks do not chain onto the cursor, and holds the network's indexer lock (on
 * PostgreSQL) so no follower writes meanwhile. Consumers (webhooks, …) are not called: history
 * is not news.
 */
export async function importBulk(opts: ImportOptions): Promise<ImportResult> {
  const slug = opts.network.slug
  const got = await withSessionLock(opts.storage, `halyard-indexer:${slug}`, (conn) =>
    importLocked(conn, opts),
  )
  if (got === 'busy')
    throw new HalyardError(
      'service_unavailable',
      `an indexer is following ${slug} now: stop it before importing`,
    )
  return got
}

async function importLocked(db: Storage['db'], opts: ImportOptions): Promise<ImportResult> {
  const slug = opts.network.slug
  const span = opts.source.range()
  const cursor = await store.readCursor(db, slug)
  const start = cursor ? cursor.number + 1n : span.from
  const result: ImportResult = { from: null, to: null, blocks: 0, transfers: 0, native: 0, skippedLogs: 0 }
  if (start > span.to) return result
  if (start < span.from)
    throw invalidRequest(
      `${slug} is indexed up to block ${cursor?.number}; the source starts at ${span.from}, leaving a gap`,
    )
  const net = { slug, chainId: opts.network.chainId }
  const batchSize = opts.batchBlocks ?? DEFAULT_BATCH
  let prev: Hash | null = cursor?.hash ?? null
  let batch = new Batch()
  // One batch is written while the next is read and decoded: the database's work and ours
  // overlap (docs/benchmarks.md). Batches commit in order, one at a time, each with its cursor.
  let writing: Promise<void> | undefined
  const flush = async () => {
    if (batch.blocks.length === 0) return
    const rows = await batch.rows(writing !== undefined)
    batch = new Batch()
    if (writing) await writing
    writing = write(db, slug, rows).then(() => {
      result.from ??= rows.from
      result.to = rows.last.number
      result.blocks += rows.blocks
      result.transfers += rows.transfers
      result.native += rows.native
      result.skippedLogs += rows.skipped
      opts.onBatch?.({
        to: rows.last.number,
        blocks: result.blocks,
        transfers: result.transfers,
        native: result.native,
      })
    })
    // Seen when awaited (before the next batch is written or at the end); not unhandled meanwhile.
    writing.catch(() => {})
  }
  try {
    for await (const b of opts.source.blocks(start, span.to)) {
      if (prev !== null && b.header.parentHash !== prev)
        throw invalidRequest(
          `block ${b.header.number} does not follow the ${b.header.number === start ? 'indexed cursor' : 'previous block'}: its parent is ${b.header.parentHash}, expected ${prev}`,
        )
      prev = b.header.hash
      batch.add(net, b)
      if (batch.blocks.length >= batchSize) await flush()
      // A source that converts blocks as they are taken (CryoParquetSource) never waits for
      // I/O between them: without a turn of the event loop here the write's answers would not be
      // read, nor its next statement sent, until the whole batch had been gathered.
      else if (writing) await setImmediate()
    }
    await flush()
  } finally {
    // A failure while reading still lets the batch being written finish (or fail) first.
    if (writing) await writing.catch(() => {})
  }
  if (writing) await writing
  return result
}

interface BatchRows {
  from: bigint
  last: Block
  blocks: number
  transfers: number
  native: number
  /** Made ready before the previous batch's write is awaited: its statements then follow each other. */
  writes: { transfers: store.TransferWrite; native: store.NativeWrite }
  kept: Block[]
  skipped: number
}

type Block = { number: bigint; hash: Hash; parentHash: Hash }

/**
 * The rows of the blocks gathered so far, made as each block arrives: the work comes in
 * block-sized pieces between which the event loop turns, rather than in one piece at the
 * flush, during which the batch being written would wait for its next statement.
 */
class Batch {
  readonly blocks: Block[] = []
  private readonly transfers: store.StoredTransfer[] = []
  private readonly native: store.StoredNativeTransfer[] = []
  private readonly skipped: SkippedLog[] = []

  add(net: Pick<Network, 'slug' | 'chainId'>, b: BulkBlock): void {
    const { number, hash, parentHash, timestamp } = b.header
    this.blocks.push({ number, hash, parentHash })
    for (const t of blockTransfers(net, b.header, b.logs, this.skipped)) {
      const row = t as store.StoredTransfer
      row.blockNumber = number
      row.blockHash = hash
      row.timestamp = timestamp
      this.transfers.push(row)
    }
    for (const r of nativeTransfersOf(b.header, b.internal)) this.native.push(r)
  }

  /** The batch's rows; `turn`: between the two packings too, the event loop turns. */
  async rows(turn: boolean): Promise<BatchRows> {
    const last = this.blocks.at(-1) as Block
    const transfers = store.transferWrite(this.transfers)
    if (turn) await setImmediate()
    const native = store.nativeWrite(this.native)
    return {
      from: (this.blocks[0] as Block).number,
      last,
      blocks: this.blocks.length,
      transfers: this.transfers.length,
      native: this.native.length,
      writes: { transfers, native },
      kept: this.blocks.filter((b) => b.number + KEEP_BLOCKS > last.number),
      skipped: this.skipped.length,
    }
  }
}

async function write(db: Storage['db'], slug: string, rows: BatchRows): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await store.writeTransfers(trx, slug, rows.writes.transfers)
    await store.writeNativeTransfers(trx, slug, rows.writes.native)
    await store.saveBlocks(trx, slug, rows.kept)
    await store.writeCursor(trx, slug, { number: rows.last.number, hash: rows.last.hash })
    await store.pruneBlocks(trx, slug, rows.last.number - KEEP_BLOCKS)
  })
}
