import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import { PushPayload } from './push-frame.ts'
import type { StreamSubscriber } from './subscriber.ts'

/**
 * The `syncing` subscription of one network: eth_syncing polled while anyone subscribes, a
 * push on every change. Nodes offer no push for this, so one poller serves every subscriber.
 */
export class SyncingStream {
  private timer: NodeJS.Timeout | undefined
  private current: string | undefined
  /** Bumped by stop(): a poll still in flight from before must not schedule another. */
  private generation = 0

  constructor(
    private readonly network: Network,
    private readonly subscribers: ReadonlySet<StreamSubscriber>,
    private readonly opts: { readonly syncPollMs: number; readonly requestTimeoutMs: number },
    private readonly logger: Logger,
  ) {}

  /** The current push value (what a new subscriber receives first). */
  async status(): Promise<string> {
    this.current ??= await this.fetch()
    return this.current
  }

  start(): void {
    if (this.timer) return
    const generation = this.generation
    const loop = async () => {
      try {
        const json = await this.fetch()
        if (generation !== this.generation) return
        if (json !== this.current) {
          const first = this.current === undefined
          this.current = json
          // New subscribers got the current value after their reply; push only changes.
          if (!first) {
            const payload = new PushPayload(json)
            for (const sub of this.subscribers) sub.deliver(payload)
          }
        }
      } catch (err) {
        this.logger.warn(
          { network: this.network.slug, err: (err as Error).message },
          'eth_syncing poll failed',
        )
      }
      if (generation !== this.generation) return
      if (this.subscribers.size === 0) {
        this.timer = undefined
        return
      }
      this.timer = setTimeout(loop, this.opts.syncPollMs)
      this.timer.unref()
    }
    this.timer = setTimeout(loop, 0)
  }

  stop(): void {
    this.generation++
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.current = undefined
  }

  /** geth's push shape: `false` when in sync, else `{syncing: true, status}`. */
  private async fetch(): Promise<string> {
    const out = await this.network.pool.call('eth_syncing', [], { timeoutMs: this.opts.requestTimeoutMs })
    if (out.error) throw new Error(out.error.message)
    return out.result === false || out.result === null
      ? 'false'
      : JSON.stringify({ syncing: true, status: out.result })
  }
}
