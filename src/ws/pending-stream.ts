import { z } from 'zod'
import { failureMessage, nodeError, readUnchecked, request } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { UpstreamSocket } from '../chains/upstream-socket.ts'
import type { Logger } from '../logger.ts'
import { PushPayload } from './push-frame.ts'
import type { StreamSubscriber } from './subscriber.ts'
import type { TxStreams } from './tx-streams.ts'

/** A filter id: an opaque string the node hands out. */
const FILTER_ID = z.string()

const PENDING = 'newPendingTransactions'

/**
 * Pending transaction hashes of one network, for `newPendingTransactions` and Alchemy's pending
 * kind: one upstream subscription (or, without an upstream WebSocket, one polled pending filter)
 * serves every subscriber of both.
 */
export interface PendingStreamDeps {
  network: Network
  socket: UpstreamSocket | undefined
  /** `newPendingTransactions` subscribers: the bare hash. */
  hashSubs: ReadonlySet<StreamSubscriber>
  /** `alchemy_pendingTransactions` subscribers, served through the tx streams. */
  txSubs: ReadonlySet<StreamSubscriber>
  txs: Pick<TxStreams, 'onPendingHash'>
  opts: { readonly pollIntervalMs: number }
  logger: Logger
  /** Pushes sent, for the stream's metrics. */
  counted: (n: number) => void
  closed: () => boolean
}

export class PendingStream {
  private timer: NodeJS.Timeout | undefined
  private filter: string | undefined

  constructor(private readonly deps: PendingStreamDeps) {}

  start(): void {
    if (this.deps.socket) {
      this.deps.socket.subscribe(PENDING, {
        params: ['newPendingTransactions'],
        onPush: (hash) => {
          if (typeof hash === 'string') this.onHash(hash)
        },
        onLive: () => {},
        onDown: () => {},
      })
      return
    }
    if (this.timer) return
    // Without an upstream WebSocket: a pending-transaction filter, polled.
    const loop = async () => {
      try {
        if (!this.filter) {
          this.filter = await request(this.deps.network, 'eth_newPendingTransactionFilter', [], FILTER_ID)
        }
        let changes: unknown
        try {
          changes = await readUnchecked(this.deps.network, 'eth_getFilterChanges', [this.filter])
        } catch (err) {
          // A filter the node forgot (expired, another upstream): installed again next round.
          if (!nodeError(err)) throw err
          this.filter = undefined
        }
        if (Array.isArray(changes))
          for (const hash of changes) if (typeof hash === 'string') this.onHash(hash)
      } catch (err) {
        this.filter = undefined
        this.deps.logger.warn(
          { network: this.deps.network.slug, err: failureMessage(err) },
          'pending poll failed',
        )
      }
      if (this.subscribers() === 0 || this.deps.closed()) return
      this.timer = setTimeout(loop, this.deps.opts.pollIntervalMs)
      this.timer.unref()
    }
    this.timer = setTimeout(loop, 0)
  }

  stop(): void {
    this.deps.socket?.unsubscribe(PENDING)
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    const filter = this.filter
    this.filter = undefined
    if (filter) void readUnchecked(this.deps.network, 'eth_uninstallFilter', [filter]).catch(() => {})
  }

  private subscribers(): number {
    return this.deps.hashSubs.size + this.deps.txSubs.size
  }

  private onHash(hash: string): void {
    if (this.deps.hashSubs.size > 0) {
      const payload = new PushPayload(JSON.stringify(hash))
      for (const sub of this.deps.hashSubs) sub.deliver(payload)
      this.deps.counted(this.deps.hashSubs.size)
    }
    if (this.deps.txSubs.size > 0) void this.deps.txs.onPendingHash(hash)
  }
}
