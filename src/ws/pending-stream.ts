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
export class PendingStream {
  private timer: NodeJS.Timeout | undefined
  private filter: string | undefined

  constructor(
    private readonly network: Network,
    private readonly socket: UpstreamSocket | undefined,
    /** `newPendingTransactions` subscribers: the bare hash. */
    private readonly hashSubs: ReadonlySet<StreamSubscriber>,
    /** `alchemy_pendingTransactions` subscribers, served through the tx streams. */
    private readonly txSubs: ReadonlySet<StreamSubscriber>,
    private readonly txs: Pick<TxStreams, 'onPendingHash'>,
    private readonly opts: { readonly pollIntervalMs: number },
    private readonly logger: Logger,
    private readonly counted: (n: number) => void,
    private readonly closed: () => boolean,
  ) {}

  start(): void {
    if (this.socket) {
      this.socket.subscribe(PENDING, {
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
          this.filter = await request(this.network, 'eth_newPendingTransactionFilter', [], FILTER_ID)
        }
        let changes: unknown
        try {
          changes = await readUnchecked(this.network, 'eth_getFilterChanges', [this.filter])
        } catch (err) {
          // A filter the node forgot (expired, another upstream): installed again next round.
          if (!nodeError(err)) throw err
          this.filter = undefined
        }
        if (Array.isArray(changes))
          for (const hash of changes) if (typeof hash === 'string') this.onHash(hash)
      } catch (err) {
        this.filter = undefined
        this.logger.warn({ network: this.network.slug, err: failureMessage(err) }, 'pending poll failed')
      }
      if (this.subscribers() === 0 || this.closed()) return
      this.timer = setTimeout(loop, this.opts.pollIntervalMs)
      this.timer.unref()
    }
    this.timer = setTimeout(loop, 0)
  }

  stop(): void {
    this.socket?.unsubscribe(PENDING)
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    const filter = this.filter
    this.filter = undefined
    if (filter) void readUnchecked(this.network, 'eth_uninstallFilter', [filter]).catch(() => {})
  }

  private subscribers(): number {
    return this.hashSubs.size + this.txSubs.size
  }

  private onHash(hash: string): void {
    if (this.hashSubs.size > 0) {
      const payload = new PushPayload(JSON.stringify(hash))
      for (const sub of this.hashSubs) sub.deliver(payload)
      this.counted(this.hashSubs.size)
    }
    if (this.txSubs.size > 0) void this.txs.onPendingHash(hash)
  }
}
