import { EventEmitter } from 'node:events'
import type { Kysely } from 'kysely'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { type BackgroundLoop, LoopSet } from '../common/background-loop.ts'
import { RequestBudget } from '../common/request-budget.ts'
import { sleep } from '../common/time.ts'
import { WakeSignal } from '../common/wake-signal.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { Storage } from '../storage/database.ts'
import type { Database } from '../storage/schema.ts'
import { leaderLoop } from '../storage/session-lock.ts'
import { NetworkFollower } from './follower.ts'
import type { HeadSignal, HeadSignalReason } from './head-signal.ts'
import { IndexerHealth } from './health.ts'
import { IndexHistory, recordExistingStart, startBlock } from './history.ts'
import { type InternalTransfersAvailability, InternalTransferTracing } from './internal-transfers.ts'
import { IndexerProgress } from './progress.ts'
import { SkippedLogs } from './skipped-logs.ts'
import { type Cursor, readCursor } from './store.ts'
import { TraceReader } from './traces.ts'
import type { BlockConsumer } from './types.ts'

export interface IndexerOptions {
  storage: Storage
  networks: NetworkRegistry
  logger: Logger
  /**
   * Head poll interval override (ms), with or without a head signal. Default: a quarter of each
   * network's block time, 50–1000 ms (devnets from 20 ms); while a head signal is live, the
   * block time itself, at most 5 s (pushes wake the follower; the poll is the safety net).
   */
  pollMs?: number
  /** Wakes a caught-up follower on a new head instead of at its next poll (optional). */
  heads?: HeadSignal
  /** Debug hook: a caught-up follower woke (poll timer fired, or a head signal). */
  onWake?: (network: string, reason: WakeReason) => void
  /** How long to wait before retrying the per-network lock held by another instance. */
  lockRetryMs?: number
  /** Skipped-log counter, lag and stuck gauges (src/metrics.ts); none in bare tests. */
  metrics?: Metrics
}

/**
 * A `GET /ready` check (src/server/ops-routes.ts): throws, naming the problem, when not ready.
 * One with `info` reports that line instead and never fails `/ready`.
 */
export interface IndexerReadinessCheck {
  name: string
  check(): Promise<void>
  info?(): Promise<string>
}

export type WakeReason = 'poll' | HeadSignalReason

/** While a head signal is live, the safety-net poll waits a block time, but never longer than this. */
const MAX_LIVE_POLL_MS = 5_000

/**
 * One follower per EVM network, each run by exactly one instance at a time: on PostgreSQL the
 * follower holds a session advisory lock on a dedicated pooled connection (keyed by schema and
 * network, so isolated test schemas do not contend); on PGlite there is one process anyway.
 */
export class IndexerService {
  private readonly consumers: BlockConsumer[] = []
  private readonly events = new EventEmitter()
  private readonly cursors = new Map<string, Cursor>()
  private started = false
  private readonly loops = new LoopSet(() => this.indexedNetworks().map((n) => this.leader(n)))
  private readonly health: IndexerHealth
  /** Malformed logs are skipped and reported here, by the follower and by consumers. */
  readonly skippedLogs: SkippedLogs
  /** Call traces: the indexer's internal transfers, and the webhooks' internal_transfer kind. */
  readonly traces: TraceReader
  private readonly tracing: InternalTransferTracing
  /** From which block each network's index is complete; address history scans. */
  readonly history: IndexHistory
  private readonly progress: IndexerProgress

  constructor(private readonly opts: IndexerOptions) {
    this.events.setMaxListeners(0)
    this.health = new IndexerHealth(opts.metrics)
    this.skippedLogs = new SkippedLogs(opts.logger, opts.metrics?.indexerLogsSkipped)
    this.traces = new TraceReader(opts.networks, opts.logger.child({ component: 'traces' }))
    this.tracing = new InternalTransferTracing(this.traces, opts.logger.child({ component: 'indexer' }))
    this.history = new IndexHistory({
      db: opts.storage.db,
      logger: opts.logger.child({ component: 'history-scan' }),
      cursor: (slug) => this.cursor(slug),
      metrics: opts.metrics,
    })
    this.progress = new IndexerProgress(opts.logger.child({ component: 'indexer' }), opts.metrics)
  }

  /**
   * Whether `slug`'s index holds internal (trace-level) transfers: not when the network is not
   * indexed, has `indexer.internalTransfers: off`, or its node offers no tracing (checked
   * again every ten minutes). Answers at once from what is known; the first call for a network
   * may say "not known yet" while the node is asked.
   */
  internalTransfersAvailability(slug: string): InternalTransfersAvailability {
    const network = this.opts.networks.all().find((n) => n.slug === slug)
    if (!network) return { available: false, reason: `unknown network ${slug}` }
    return this.tracing.availability(network)
  }

  /**
   * One readiness check per indexed network, named `indexer <chain>/<network>`: failing while
   * the indexer is more than `indexer.maxLagBlocks` behind or keeps failing on the same block;
   * and one line `internal transfers <chain>/<network>` that only informs.
   */
  readinessChecks(): IndexerReadinessCheck[] {
    return this.indexedNetworks().flatMap((n) => [
      {
        name: `indexer ${n.chain}/${n.network}`,
        check: async () => {
          const problem = await this.health.problem(n, await this.cursor(n.slug))
          if (problem) throw new Error(problem)
        },
      },
      // A capability, not a fault: `available (…)` or `unavailable: <reason>`, never failing.
      {
        name: `internal transfers ${n.chain}/${n.network}`,
        check: async () => {},
        info: () => this.tracing.describe(n),
      },
      // Information too: from which block the index is complete, how far it is, the scans.
      {
        name: `history ${n.chain}/${n.network}`,
        check: async () => {},
        info: () => this.history.describe(n),
      },
    ])
  }

  /** Consumers see every block in order, inside the indexer's transaction. Add before start. */
  addConsumer(consumer: BlockConsumer): void {
    if (this.started) throw new Error(`indexer consumer ${consumer.name} added after the indexer started`)
    this.consumers.push(consumer)
  }

  /** Networks the indexer follows: every EVM network whose config does not switch it off. */
  indexedNetworks(): Network[] {
    return this.opts.networks.all().filter((n) => n.kind === 'evm' && n.config.indexer?.enabled !== false)
  }

  start(): void {
    if (this.started) return
    this.started = true
    // Ask each node whether it traces now, so the query side's first question finds an answer.
    for (const n of this.indexedNetworks()) this.tracing.availability(n)
    this.loops.start()
    // Scans a previous run left unfinished go on (each resumes at its last window).
    this.history
      .resume(this.indexedNetworks())
      .catch((err) => this.opts.logger.warn({ err: (err as Error).message }, 'history scans not resumed'))
  }

  async stop(): Promise<void> {
    await Promise.all([this.loops.stop(), this.history.stop()])
  }

  /** The last indexed block of a network (as committed), or null before the first block. */
  async cursor(slug: string): Promise<Cursor | null> {
    return this.cursors.get(slug) ?? (await readCursor(this.opts.storage.db, slug))
  }

  /** Resolves once block `number` of `slug` is indexed (committed); rejects after `timeoutMs`. */
  async waitForBlock(slug: string, number: bigint, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const c = await readCursor(this.opts.storage.db, slug)
      if (c && c.number >= number) return
      const left = deadline - Date.now()
      if (left <= 0)
        throw new Error(`indexer of ${slug} did not reach block ${number} within ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 200))
        function done() {
          clearTimeout(t)
          resolve()
        }
        this.events.once('advance', done)
      })
    }
  }

  private recordedStart(slug: string, block: bigint): bigint {
    this.progress.completeFrom(slug, block)
    return block
  }

  /** The network's follower, run by whichever instance holds its leader lock. */
  private leader(network: Network): BackgroundLoop {
    const log = this.opts.logger.child({ network: network.slug })
    const cfg = network.config.indexer
    const follower = new NetworkFollower({
      network,
      consumers: this.consumers,
      logger: log,
      history: {
        start: async (db) => this.recordedStart(network.slug, await startBlock(db, network)),
        existing: async (db, cursor) =>
          this.recordedStart(network.slug, await recordExistingStart(db, network, cursor)),
      },
      maxRange: cfg?.maxBlockRange ?? 2000,
      maxLogsPerRange: 10_000,
      headStart: this.opts.storage.kind === 'postgres',
      onAdvance: (slug, c) => {
        this.cursors.set(slug, c)
        this.events.emit('advance', slug, c)
      },
      onSkippedLog: this.skippedLogs.report,
      tracing: this.tracing,
      budget: new RequestBudget({
        requestsPerSecond: cfg?.requestsPerSecond ?? 200,
        maxConcurrency: cfg?.maxConcurrency ?? 16,
      }),
      workers: cfg?.backfillWorkers ?? 4,
    })
    // A local devnet answers a head poll in well under a millisecond, so a fast devnet (small
    // blockTimeMs) may be polled down to 20 ms; public networks stay at 50 ms or more.
    const minPollMs = network.isDevnet ? 20 : 50
    const basePollMs =
      this.opts.pollMs ?? Math.min(1000, Math.max(minPollMs, Math.floor(network.config.blockTimeMs / 4)))
    const poll: PollIntervals = {
      baseMs: basePollMs,
      liveMs:
        this.opts.pollMs ?? Math.max(basePollMs, Math.min(MAX_LIVE_POLL_MS, network.config.blockTimeMs)),
    }
    return leaderLoop({
      storage: this.opts.storage,
      key: `halyard-indexer:${network.slug}`,
      name: 'indexer',
      failure: 'indexer stopped on repeated errors; restarting',
      logger: log,
      retryMs: this.opts.lockRetryMs ?? 2000,
      lead: ({ conn, ended }) => this.follow(network, follower, conn, poll, log, ended),
      // Another instance follows this network: its failures are not ours to report.
      onBusy: () => this.health.forget(network.slug),
      // Not following any more (lock lost, or another instance has it): cursor() reads the DB.
      afterAttempt: () => {
        this.cursors.delete(network.slug)
        follower.reset()
      },
    })
  }

  /**
   * Steps until stopped; gives up (to re-acquire the lock) after consecutive failures. Caught
   * up, it sleeps until the poll timer or a head signal, whichever comes first; the head signal
   * is watched only while this instance follows the network.
   */
  private async follow(
    network: Network,
    follower: NetworkFollower,
    db: Kysely<Database>,
    poll: PollIntervals,
    log: Logger,
    /** Stopping, or the session holding the lock gone: either ends the follow. */
    ended: AbortSignal,
  ) {
    // A head signal that arrives while the follower is stepping is kept, so the next sleep ends
    // at once (the step may have read the head just before the new block).
    const waker = new WakeSignal<HeadSignalReason>(ended)
    const watch = this.opts.heads?.watch(network, (reason) => waker.wake(reason))
    let failures = 0
    // After a push, poll at the base rate until a block comes: the node that answers our HTTP
    // reads may not have the pushed block yet (another upstream, or a lagging one).
    let eager = false
    try {
      while (!ended.aborted) {
        try {
          const worked = await follower.step(db)
          failures = 0
          this.health.stepSucceeded(network.slug)
          this.health.observeLag(network, follower.lastTarget, this.cursors.get(network.slug)?.number)
          this.progress.observe(network.slug, this.cursors.get(network.slug)?.number, follower.lastTarget)
          if (worked) {
            eager = false
            continue
          }
          const woke = await waker.sleep(watch?.live && !eager ? poll.liveMs : poll.baseMs)
          if (woke === 'stop') return
          const reason: WakeReason = woke === 'timeout' || woke === 'wake' ? 'poll' : woke
          if (reason !== 'poll') eager = true
          this.opts.onWake?.(network.slug, reason)
        } catch (err) {
          if (ended.aborted) return
          failures++
          this.health.stepFailed(network.slug, follower.nextBlock, err)
          // A step stuck on a block still read the head first: the lag keeps growing in /metrics.
          this.health.observeLag(network, follower.lastTarget, this.cursors.get(network.slug)?.number)
          follower.stepFailed()
          // Debug until it persists: an upstream blip is routine, the give-up below is a warning.
          log.debug({ err: (err as Error).message, failures }, 'indexer step failed')
          if (failures >= 5) throw err
          await sleep(Math.min(10_000, poll.baseMs * 2 ** failures), ended)
        }
      }
    } finally {
      watch?.close()
    }
  }
}

interface PollIntervals {
  /** Without a live head signal, or while a pushed head is not readable yet. */
  baseMs: number
  /** While a head signal is live: only the safety net for a lost push. */
  liveMs: number
}
