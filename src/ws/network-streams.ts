import { nodeError, readUnchecked } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { UpstreamSocket } from '../chains/upstream-socket.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import { BlockReads } from './block-reads.ts'
import { HeadTracker } from './head-tracker.ts'
import { PendingStream } from './pending-stream.ts'
import { PushPayload } from './push-frame.ts'
import {
  type ChainLogEntry,
  type Head,
  matchesFilter,
  type SubscriptionKind,
  toHead,
  upstreamLogSchema,
} from './routes.ts'
import type { StreamSubscriber } from './subscriber.ts'
import { SyncingStream } from './syncing-stream.ts'
import { MINED, PENDING_TXS } from './tx-filters.ts'
import { TxStreams } from './tx-streams.ts'

export interface StreamOptions {
  /** Head polling period when no upstream WebSocket is live. */
  readonly pollIntervalMs: number
  readonly pingIntervalMs: number
  readonly backoffMinMs: number
  readonly backoffMaxMs: number
  readonly requestTimeoutMs: number
  /** eth_syncing is polled this often while someone subscribes to `syncing`. */
  readonly syncPollMs: number
  readonly keepBlocks: number
  readonly maxBackfill: number
}

const HEADS = 'newHeads'

/**
 * The upstream side of one network: at most one upstream stream per kind, fanned out to
 * every subscriber. Heads come from the upstream WebSocket (polled over HTTP while it is down
 * or when the network has none) through a HeadTracker, so subscribers see every block once,
 * in order; logs are fetched once per new block and filtered locally per subscriber, and the
 * logs of blocks a reorg undid are pushed again with `removed: true`.
 */
export class NetworkStreams {
  private readonly subs: Record<SubscriptionKind, Set<StreamSubscriber>> = {
    newHeads: new Set(),
    logs: new Set(),
    newPendingTransactions: new Set(),
    syncing: new Set(),
    [MINED]: new Set(),
    [PENDING_TXS]: new Set(),
  }
  private readonly socket: UpstreamSocket | undefined
  private readonly tracker: HeadTracker
  /** Each block's logs, read once whatever the number of `logs` subscribers. */
  private readonly logs: BlockReads<ChainLogEntry>
  private headsOn = false
  private headsReady: Promise<void> = Promise.resolve()
  private headsGeneration = 0
  private headPollTimer: NodeJS.Timeout | undefined
  private headPolling = false
  private readonly pending: PendingStream
  private readonly syncing: SyncingStream
  private readonly txs: TxStreams
  private closed = false
  /** Observer for benchmarks and tests: a head arrived from upstream (ms since epoch, fractional). */
  onHeadReceived: ((number: bigint, atMs: number) => void) | undefined
  /**
   * Observer: a head was handed to every subscriber's socket (the fan-out loop ended at `atMs`,
   * having used `cpuMs` of this process's CPU time).
   */
  onHeadFannedOut: ((number: bigint, atMs: number, cpuMs: number) => void) | undefined

  constructor(
    readonly network: Network,
    private readonly opts: StreamOptions,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {
    const urls = network.config.upstreams.flatMap((u) => (u.ws ? [u.ws] : []))
    if (urls.length > 0) {
      this.socket = new UpstreamSocket({
        urls,
        label: network.slug,
        logger,
        pingIntervalMs: opts.pingIntervalMs,
        backoffMinMs: opts.backoffMinMs,
        backoffMaxMs: opts.backoffMaxMs,
        requestTimeoutMs: opts.requestTimeoutMs,
        onConnect: () => metrics?.wsUpstreamConnects.inc({ network: network.slug }),
      })
    }
    this.syncing = new SyncingStream(network, this.subs.syncing, opts, logger)
    this.txs = new TxStreams({
      network,
      mined: this.subs[MINED],
      pending: this.subs[PENDING_TXS],
      opts,
      logger,
      counted: (n, kind) => this.counted(kind === 'mined' ? MINED : PENDING_TXS, n),
    })
    this.logs = new BlockReads(network, opts, logger, {
      method: 'eth_getLogs',
      params: (block) => [{ blockHash: block.hash }],
      items: (result) => {
        if (!Array.isArray(result)) throw new Error('eth_getLogs returned no array')
        return result.flatMap((raw) => {
          const parsed = upstreamLogSchema.safeParse(raw)
          if (!parsed.success) return []
          const { removed: _ignored, ...wire } = parsed.data as Record<string, unknown>
          return [{ address: parsed.data.address, topics: parsed.data.topics, wire }]
        })
      },
      missed: 'logs subscribers',
    })
    this.pending = new PendingStream({
      network,
      socket: this.socket,
      hashSubs: this.subs.newPendingTransactions,
      txSubs: this.subs[PENDING_TXS],
      txs: this.txs,
      opts,
      logger,
      counted: (n) => this.counted('newPendingTransactions', n),
      closed: () => this.closed,
    })
    this.tracker = new HeadTracker(
      { byHash: (h) => this.blockHead('eth_getBlockByHash', [h, false]) },
      (added, removed) => this.emitBlocks(added, removed),
      {
        keep: opts.keepBlocks,
        maxBackfill: opts.maxBackfill,
        logger,
        label: network.slug,
        // On an idle chain no next head would come to retry with: poll once instead.
        onStall: () => {
          setTimeout(() => void this.pollHeadOnce(), opts.pollIntervalMs).unref()
        },
      },
    )
  }

  /** Upstream connections opened so far (0 without an upstream WebSocket). */
  get upstreamConnects(): number {
    return this.socket?.connects ?? 0
  }

  get upstreamUrl(): string | undefined {
    return this.socket?.currentUrl
  }

  subscriberCount(): number {
    let n = 0
    for (const set of Object.values(this.subs)) n += set.size
    return n
  }

  /**
   * Readies the stream a new subscription needs before its reply is sent: heads and logs start
   * from the current head, so the subscriber gets exactly the blocks mined after its reply.
   */
  prepare(kind: SubscriptionKind): Promise<void> {
    if (!usesHeads(kind)) return Promise.resolve()
    if (!this.headsOn) this.headsReady = this.startHeads()
    return this.headsReady
  }

  add(sub: StreamSubscriber): void {
    if (this.closed) return
    this.subs[sub.kind].add(sub)
    if (usesHeads(sub.kind)) void this.prepare(sub.kind)
    else if (sub.kind === 'newPendingTransactions' || sub.kind === PENDING_TXS) this.pending.start()
    else this.syncing.start()
  }

  /** Also for a subscription that was prepared but never added: an idle stream stops either way. */
  remove(sub: StreamSubscriber): void {
    this.subs[sub.kind].delete(sub)
    if (this.subs.newHeads.size === 0 && this.subs.logs.size === 0 && this.subs[MINED].size === 0)
      this.stopHeads()
    if (this.subs.logs.size === 0) this.logs.clear()
    if (this.subs[MINED].size === 0) this.txs.reset()
    if (this.subs.newPendingTransactions.size === 0 && this.subs[PENDING_TXS].size === 0) this.pending.stop()
    if (this.subs.syncing.size === 0) this.syncing.stop()
  }

  /** The current `syncing` push value (what a new subscriber receives first). */
  syncingStatus(): Promise<string> {
    return this.syncing.status()
  }

  async close(): Promise<void> {
    this.closed = true
    for (const set of Object.values(this.subs)) set.clear()
    this.stopHeads()
    this.pending.stop()
    this.syncing.stop()
    await this.socket?.close()
  }

  // ---- heads and logs ----

  private async startHeads(): Promise<void> {
    if (this.headsOn) return
    this.headsOn = true
    const generation = ++this.headsGeneration
    try {
      const start = await this.blockHead('eth_getBlockByNumber', ['latest', false])
      if (start && generation === this.headsGeneration) this.tracker.seed(start)
    } catch (err) {
      this.logger.warn({ network: this.network.slug, err: (err as Error).message }, 'could not read the head')
    }
    if (generation !== this.headsGeneration || this.closed) return
    // Poll until the upstream subscription is live (and whenever it is down).
    this.startHeadPoll()
    this.socket?.subscribe(HEADS, {
      params: ['newHeads'],
      onPush: (raw) => {
        const head = toHead(raw)
        if (!head) return
        this.onHeadReceived?.(head.number, performance.timeOrigin + performance.now())
        this.tracker.offer(head)
      },
      onLive: () => {
        this.stopHeadPoll()
        // Blocks mined while we were reconnecting: fetch the head now; the tracker backfills.
        void this.pollHeadOnce()
      },
      onDown: () => this.startHeadPoll(),
    })
  }

  private stopHeads(): void {
    if (!this.headsOn) return
    this.headsOn = false
    this.headsGeneration++
    this.socket?.unsubscribe(HEADS)
    this.stopHeadPoll()
    this.tracker.reset()
    this.logs.clear()
    this.txs.reset()
  }

  private startHeadPoll(): void {
    if (this.headPolling || !this.headsOn) return
    this.headPolling = true
    const loop = async () => {
      if (!this.headPolling) return
      await this.pollHeadOnce()
      if (!this.headPolling) return
      this.headPollTimer = setTimeout(loop, this.opts.pollIntervalMs)
      this.headPollTimer.unref()
    }
    void loop()
  }

  private stopHeadPoll(): void {
    this.headPolling = false
    if (this.headPollTimer) clearTimeout(this.headPollTimer)
    this.headPollTimer = undefined
  }

  private async pollHeadOnce(): Promise<void> {
    try {
      const head = await this.blockHead('eth_getBlockByNumber', ['latest', false])
      if (head && this.headsOn) this.tracker.offer(head)
    } catch (err) {
      this.logger.warn({ network: this.network.slug, err: (err as Error).message }, 'head poll failed')
    }
  }

  private async blockHead(method: string, params: unknown[]): Promise<Head | undefined> {
    let result: unknown
    try {
      result = await readUnchecked(this.network, method, params, { timeoutMs: this.opts.requestTimeoutMs })
    } catch (err) {
      const refused = nodeError(err)
      throw refused ? new Error(`${method}: ${refused.message}`) : err
    }
    if (result === null) return undefined
    const head = toHead(result)
    if (!head) throw new Error(`${method}: the upstream returned a malformed block`)
    return head
  }

  /** In order: logs undone by a reorg (removed: true), then each new block's head and logs. */
  private async emitBlocks(added: readonly Head[], removed: readonly Head[]): Promise<void> {
    for (const block of removed) {
      const logs = this.logs.take(block.hash)
      if (!logs) continue
      for (let i = logs.length - 1; i >= 0; i--) this.fanOutLog(logs[i]!, true)
    }
    for (const block of added) {
      if (this.subs.newHeads.size > 0) {
        const cpu = this.onHeadFannedOut ? process.cpuUsage() : undefined
        const payload = new PushPayload(JSON.stringify(block.wire))
        for (const sub of this.subs.newHeads) sub.deliver(payload)
        this.counted('newHeads', this.subs.newHeads.size)
        if (cpu) {
          const used = process.cpuUsage(cpu)
          this.onHeadFannedOut?.(
            block.number,
            performance.timeOrigin + performance.now(),
            (used.user + used.system) / 1000,
          )
        }
      }
      if (this.subs.logs.size > 0) {
        const logs = await this.logs.fetch(block)
        for (const log of logs) this.fanOutLog(log, false)
      }
    }
    await this.txs.onBlocks(added, removed)
  }

  private fanOutLog(log: ChainLogEntry, removed: boolean): void {
    let payload: PushPayload | undefined
    let n = 0
    for (const sub of this.subs.logs) {
      if (!sub.filter || !matchesFilter(log, sub.filter)) continue
      payload ??= new PushPayload(JSON.stringify({ ...log.wire, removed }))
      sub.deliver(payload)
      n++
    }
    this.counted('logs', n)
  }

  /** One metrics update per event, not per client: the fan-out loop stays tight. */
  private counted(kind: SubscriptionKind, n: number): void {
    if (n > 0) this.metrics?.wsPushes.inc({ network: this.network.slug, kind }, n)
  }
}

/** Kinds fed from the head tracker (every block once, in order, reorgs included). */
function usesHeads(kind: SubscriptionKind): boolean {
  return kind === 'newHeads' || kind === 'logs' || kind === MINED
}
