import type { Kysely } from 'kysely'
import type { Network } from '../chains/registry.ts'
import type { RequestBudget } from '../common/request-budget.ts'
import type { Logger } from '../logger.ts'
import type { Database } from '../storage/schema.ts'
import type { Hash } from '../types.ts'
import { RangeReader, rangeOf } from './backfill-range.ts'
import { type Budgeted, internalTransfersOf } from './block-fetch.ts'
import { type ChainLog, ChainReader } from './chain.ts'
import { toIndexedBlock } from './indexed-block.ts'
import type { InternalTransferTracing } from './internal-transfers.ts'
import { nativeTransfersOf } from './native.ts'
import { RangeQueue } from './range-queue.ts'
import type { ReportSkippedLog, SkippedLog } from './skipped-logs.ts'
import * as store from './store.ts'
import type { BlockConsumer, IndexedBlock } from './types.ts'

export interface FollowerOptions {
  network: Network
  consumers: readonly BlockConsumer[]
  logger: Logger
  /** Where the index starts (`indexer.history`), recorded durably as where it is complete from. */
  history: {
    /** The first block to index when there is no cursor yet. */
    start(db: Kysely<Database>): Promise<bigint>
    /** A cursor exists: record its start if an older version left none. */
    existing(db: Kysely<Database>, cursor: store.Cursor): Promise<unknown>
  }
  /** Largest eth_getLogs range (blocks) during backfill. */
  maxRange: number
  /** A range answer with more logs than this shrinks the next range. */
  maxLogsPerRange: number
  /** Call consumers' prepare() before a head block's transaction (needs a second connection). */
  headStart: boolean
  /** Called after each commit with the new cursor. */
  onAdvance: (network: string, cursor: store.Cursor) => void
  /** A log under a transfer topic that fits no standard: skipped, and reported here. */
  onSkippedLog: ReportSkippedLog
  /** Internal transfers: whether to trace, and each block's trace (internal-transfers.ts). */
  tracing: InternalTransferTracing
  /** The network's request budget: every read of the follower goes through it. */
  budget?: RequestBudget
  /** Backfill ranges read at once (`indexer.backfillWorkers`); 1 reads one ahead of the commit. */
  workers?: number
}

/** Below this gap to the target the follower goes block by block (full blocks); above it, ranges. */
const BACKFILL_GAP = 16n
/** Block hashes kept for finding the common ancestor of a reorg. */
const KEEP_BLOCKS = 512n

/** In-memory position: `hash` null before the first indexed block (nothing to compare with). */
interface Position {
  number: bigint
  hash: Hash | null
}

/**
 * Follows one EVM network: catches up in adaptive ranges (eth_getLogs per range, every block
 * with its transactions, traced when the node traces), then goes block by block; detects reorgs
 * by parent hash (and by the hash at the cursor when the head did not move, as after
 * `anvil_reorg`), rolls back to the common ancestor, and commits each step's data (token and
 * native transfers), consumer writes and cursor in one transaction.
 */
export class NetworkFollower {
  private readonly chain: ChainReader
  private readonly slug: string
  private pos: Position | undefined
  /** Backfill ranges: their sizes, and reading them (backfill-range.ts). */
  private readonly ranges: RangeReader
  /** Head minus confirmations at the last step that read the head (for lag and readiness). */
  lastTarget: bigint | undefined
  /** The first block the last step tried to index (the one a failing step is stuck on). */
  nextBlock: bigint | undefined
  /** Backfill ranges being read, taken in block order (range-queue.ts). */
  private readonly queue: RangeQueue
  /** Runs one request within the network's request budget. */
  private readonly run: Budgeted
  /** Logs skipped while decoding this step's blocks: reported once their blocks commit. */
  private skipped: SkippedLog[] = []

  constructor(private readonly opts: FollowerOptions) {
    this.chain = new ChainReader(opts.network, opts.budget)
    this.slug = opts.network.slug
    const budget = opts.budget
    this.run = budget ? (task) => budget.run(task) : (task) => task()
    this.ranges = new RangeReader(this.chain, {
      network: opts.network,
      logger: opts.logger,
      tracing: opts.tracing,
      maxRange: opts.maxRange,
      maxLogsPerRange: opts.maxLogsPerRange,
      attempt: (n) => this.traceAttempt(n),
      run: this.run,
    })
    this.queue = new RangeQueue(this.ranges, opts.workers ?? 1)
  }

  /** Forget the in-memory position and every range being read (a lost lock): re-read from the DB. */
  reset(): void {
    this.pos = undefined
    this.queue.clear()
  }

  /**
   * A step failed: forget the in-memory position (re-read from the DB). Backfill ranges being
   * read are kept: the next step checks they start at the cursor, and the failed range is read
   * again before them (range-queue.ts).
   */
  stepFailed(): void {
    this.pos = undefined
  }

  /** Backfill ranges being read right now (for tests and the bench). */
  get rangesInFlight(): number {
    return this.queue.inFlight
  }

  /** One step of work. Returns false when caught up (the caller waits before the next step). */
  async step(db: Kysely<Database>): Promise<boolean> {
    this.skipped = []
    const pos = await this.position(db)
    const head = await this.chain.header('latest')
    if (!head) return false
    const confirmations = BigInt(this.opts.network.config.confirmations)
    const target = head.number - confirmations
    this.lastTarget = target
    this.nextBlock = pos.number + 1n
    if (target < 0n) return false

    if (target <= pos.number) {
      if (pos.hash === null) return false
      // The chain got shorter than our cursor (e.g. anvil_rollback): find the ancestor at or below target.
      if (target < pos.number) return this.handleReorg(db, pos, target)
      // The head did not pass us: the block we stand on may have been replaced (anvil_reorg).
      const at = target === head.number ? head : await this.chain.header(target)
      if (!at || at.hash === pos.hash) return false
      return this.handleReorg(db, pos, pos.number)
    }
    if (target - pos.number > BACKFILL_GAP) return this.backfill(db, pos, target)
    return this.followBlock(db, pos, pos.number + 1n)
  }

  private async position(db: Kysely<Database>): Promise<Position> {
    if (this.pos) return this.pos
    const saved = await store.readCursor(db, this.slug)
    if (saved) {
      await this.opts.history.existing(db, saved)
      this.pos = saved
      return saved
    }
    const start = await this.opts.history.start(db)
    this.pos = { number: start - 1n, hash: null }
    return this.pos
  }

  private async followBlock(db: Kysely<Database>, pos: Position, n: bigint): Promise<boolean> {
    const started = performance.now()
    const net = this.opts.network
    const tracing = await this.opts.tracing.wanted(net)
    // Not known yet whether the node traces: wait (a poll) rather than index blocks untraced.
    if (tracing === undefined) return false
    // Block, logs and trace in parallel (one round trip, not three): logs and trace are asked
    // for by number, so each must match the block, or it was replaced between the answers.
    const [block, logs, first, receipts] = await Promise.all([
      this.chain.header(n, true),
      this.chain.logsByRange(n, n),
      tracing ? this.traceAttempt(n) : undefined,
      this.chain.blockReceipts(n),
    ])
    if (!block) return false
    if (pos.hash !== null && block.parentHash !== pos.hash) return this.handleReorg(db, pos, pos.number)
    if (logs.some((l) => l.blockHash !== block.hash)) return false
    if (!(await this.chain.markReverted(block, { receipts }))) return false
    const internal = await internalTransfersOf(this.opts.tracing, net, block, first, this.run)
    if (internal === 'replaced') return false
    const fetched = performance.now()
    const indexed = toIndexedBlock(net, block, logs, internal, this.skipped)
    const decoded = performance.now()
    const t = await this.commit(
      db,
      [indexed],
      nativeTransfersOf(block, internal),
      [{ number: n, hash: block.hash, parentHash: block.parentHash }],
      {
        number: n,
        hash: block.hash,
      },
    )
    // Stage timings of the head path (bench:webhooks prints them from here).
    this.opts.logger.debug(
      {
        block: Number(n),
        logs: logs.length,
        startedAt: performance.timeOrigin + started,
        fetchMs: fetched - started,
        decodeMs: decoded - fetched,
        ...t,
      },
      'block indexed',
    )
    return true
  }

  private async backfill(db: Kysely<Database>, pos: Position, target: bigint): Promise<boolean> {
    const from = pos.number + 1n
    const tracing = await this.opts.tracing.wanted(this.opts.network)
    // Not known yet whether the node traces: wait (a poll) rather than index blocks untraced.
    if (tracing === undefined) return false
    // Ranges are read ahead, up to the worker count, and taken here in block order.
    const { to, got } = await this.queue.take(from, target, tracing)
    if (got.kind === 'error') {
      this.queue.failed(from, to)
      throw got.err
    }
    if (got.kind === 'replaced') return this.inconsistent()
    const { logs, fetched } = got
    const first = fetched.get(from)?.header
    const last = fetched.get(to)?.header
    if (!first || !last) return this.inconsistent()
    if (pos.hash !== null && first.parentHash !== pos.hash) return this.handleReorg(db, pos, pos.number)
    const byBlock = new Map<bigint, ChainLog[]>()
    for (const l of logs) {
      // A log whose block hash differs from the header read beside it came from a replaced block.
      const h = fetched.get(l.blockNumber)?.header
      if (!h || h.hash !== l.blockHash) return this.inconsistent()
      const list = byBlock.get(l.blockNumber)
      if (list) list.push(l)
      else byBlock.set(l.blockNumber, [l])
    }
    // Every block is read with its transactions (external transfers); consumers see them all
    // when one needs every block, else only the blocks with logs, as before.
    const asked = await Promise.all(this.opts.consumers.map((c) => c.needsFullBlocks?.(this.slug)))
    const full = asked.some((a) => a === true)
    const blocks: IndexedBlock[] = []
    const native: store.StoredNativeTransfer[] = []
    let txs = 0
    for (const n of rangeOf(from, to)) {
      const f = fetched.get(n)
      if (!f) return this.inconsistent() // the node lost a block we just saw: try again next step
      txs += f.header.transactions?.length ?? 0
      for (const r of nativeTransfersOf(f.header, f.internal)) native.push(r)
      if (full || byBlock.has(n))
        blocks.push(
          toIndexedBlock(this.opts.network, f.header, byBlock.get(n) ?? [], f.internal, this.skipped),
        )
    }
    this.ranges.carried(txs)
    const seen = [...fetched.values()].map(({ header: h }) => ({
      number: h.number,
      hash: h.hash,
      parentHash: h.parentHash,
    }))
    // The ranges after this one are being read meanwhile (the queue started them on take).
    const t = await this.commit(db, blocks, native, seen, { number: to, hash: last.hash }).catch(
      (err: unknown) => {
        this.queue.failed(from, to)
        throw err
      },
    )
    this.opts.logger.debug(
      { from: Number(from), to: Number(to), logs: logs.length, txs, ...got.ms, ...t },
      'range indexed',
    )
    return true
  }

  /** One trace try beside the block, within the network's request budget. */
  private traceAttempt(n: bigint) {
    return this.run(() => this.opts.tracing.attempt(this.opts.network, n))
  }

  /** Answers that do not fit together (a block replaced between them): drop what was read, wait. */
  private inconsistent(): false {
    this.queue.clear()
    return false
  }

  private async commit(
    db: Kysely<Database>,
    blocks: IndexedBlock[],
    native: store.StoredNativeTransfer[],
    seen: { number: bigint; hash: Hash; parentHash: Hash | null }[],
    cursor: store.Cursor,
  ): Promise<{ indexMs: number; consumersMs: number; commitMs: number; committedAt: number }> {
    const t = { indexMs: 0, consumersMs: 0, commitMs: 0, committedAt: 0 }
    let mark = performance.now()
    const lap = () => {
      const now = performance.now()
      const ms = now - mark
      mark = now
      return ms
    }
    // Head path (one block): consumers get a head start that overlaps the index insert. Not
    // in backfill, where many blocks at once would each take a pooled connection; not on
    // PGlite, whose one connection the transaction holds (the head start would wait on it).
    if (blocks.length === 1 && this.opts.headStart) {
      for (const c of this.opts.consumers) c.prepare?.(blocks[0] as IndexedBlock).catch(() => {})
    }
    await db.transaction().execute(async (trx) => {
      const transfers: store.StoredTransfer[] = []
      for (const b of blocks)
        for (const t of b.transfers)
          transfers.push({ ...t, blockNumber: b.number, blockHash: b.hash, timestamp: b.timestamp })
      await store.saveTransfers(trx, this.slug, transfers)
      await store.saveNativeTransfers(trx, this.slug, native)
      await store.saveBlocks(trx, this.slug, seen)
      t.indexMs = lap()
      for (const b of blocks) for (const c of this.opts.consumers) await c.onBlock(trx, b)
      t.consumersMs = lap()
      await store.writeCursor(trx, this.slug, cursor)
      if (cursor.number % 64n === 0n || seen.length > 1) {
        await store.pruneBlocks(trx, this.slug, cursor.number - KEEP_BLOCKS)
      }
    })
    t.commitMs = lap()
    t.committedAt = performance.timeOrigin + mark
    this.pos = { ...cursor }
    // Counted after the commit, so a block retried after a failed commit is not counted twice.
    for (const s of this.skipped) this.opts.onSkippedLog(s)
    this.skipped = []
    for (const c of this.opts.consumers) c.afterCommit?.(this.slug, cursor.number)
    this.opts.onAdvance(this.slug, cursor)
    return t
  }

  /**
   * The chain no longer has our block at `from`: walk our stored hashes down until one matches
   * the chain, and roll back to it.
   */
  private async handleReorg(db: Kysely<Database>, pos: Position, from: bigint): Promise<boolean> {
    const stored = await store.recentBlocks(db, this.slug, from, Number(KEEP_BLOCKS))
    for (const s of stored) {
      const onChain = await this.chain.header(s.number)
      if (onChain && onChain.hash === s.hash) {
        this.opts.logger.warn(
          { network: this.slug, from: pos.number.toString(), ancestor: s.number.toString() },
          'chain reorganisation: rolling back to the common ancestor',
        )
        await this.rollbackTo(db, s)
        return true
      }
    }
    // Deeper than what we keep: restart from just below the oldest block we still know.
    const oldest = stored.at(-1)?.number ?? pos.number
    const base = oldest - 1n
    const header = base >= 0n ? await this.chain.header(base) : null
    this.opts.logger.error(
      { network: this.slug, ancestor: base.toString() },
      'reorg deeper than the retained block hashes; rolling back to the oldest retained block',
    )
    if (header) await this.rollbackTo(db, { number: base, hash: header.hash })
    else {
      await db.transaction().execute(async (trx) => {
        await store.rollbackAbove(trx, this.slug, -1n)
        for (const c of this.opts.consumers) await c.onRollback(trx, this.slug, -1n)
        await trx.deleteFrom('indexer_cursors').where('network', '=', this.slug).execute()
      })
      this.pos = undefined
      this.queue.clear()
    }
    return true
  }

  private async rollbackTo(db: Kysely<Database>, ancestor: store.Cursor): Promise<void> {
    this.queue.clear()
    await db.transaction().execute(async (trx) => {
      await store.rollbackAbove(trx, this.slug, ancestor.number)
      for (const c of this.opts.consumers) await c.onRollback(trx, this.slug, ancestor.number)
      await store.writeCursor(trx, this.slug, ancestor)
    })
    this.pos = { ...ancestor }
    this.opts.onAdvance(this.slug, ancestor)
  }
}
