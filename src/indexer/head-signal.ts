import type { Network } from '../chains/registry.ts'
import { UpstreamSocket } from '../chains/upstream-socket.ts'
import type { Logger } from '../logger.ts'

/**
 * Why a head signal woke the follower: `head` = the upstream pushed a new head; `live` = the
 * push subscription was (re)established, so blocks mined while it was down may be waiting.
 */
export type HeadSignalReason = 'head' | 'live'

export interface HeadWatch {
  /** True while pushes arrive (the subscription is acknowledged and its connection is up). */
  readonly live: boolean
  close(): void
}

/**
 * A wake-up source for the indexer's follower: a hint that a network may have a new head. It
 * carries no data; the follower still reads blocks by number from its cursor, so a missed,
 * late or duplicate signal never loses or repeats a block (the poll remains the safety net).
 */
export interface HeadSignal {
  /** Watches `network` until close(); undefined when the network has no push source. */
  watch(network: Network, wake: (reason: HeadSignalReason) => void): HeadWatch | undefined
}

export interface UpstreamHeadSignalOptions {
  readonly logger: Logger
  readonly pingIntervalMs?: number
  readonly backoffMinMs?: number
  readonly backoffMaxMs?: number
  readonly requestTimeoutMs?: number
}

/**
 * Head signals from the network's upstream WebSocket URLs (`upstreams[].ws`): one newHeads
 * subscription per watched network, on its own connection (failover, keep-alive pings and
 * reconnects are the UpstreamSocket's), open only while the follower holds the network.
 */
export class UpstreamHeadSignal implements HeadSignal {
  constructor(private readonly opts: UpstreamHeadSignalOptions) {}

  watch(network: Network, wake: (reason: HeadSignalReason) => void): HeadWatch | undefined {
    const urls = network.config.upstreams.flatMap((u) => (u.ws ? [u.ws] : []))
    if (urls.length === 0) return undefined
    const socket = new UpstreamSocket({
      urls,
      label: network.slug,
      logger: this.opts.logger,
      pingIntervalMs: this.opts.pingIntervalMs ?? 15_000,
      backoffMinMs: this.opts.backoffMinMs ?? 100,
      backoffMaxMs: this.opts.backoffMaxMs ?? 10_000,
      requestTimeoutMs: this.opts.requestTimeoutMs ?? network.config.requestTimeoutMs ?? 10_000,
    })
    let live = false
    socket.subscribe('newHeads', {
      params: ['newHeads'],
      onPush: () => wake('head'),
      onLive: () => {
        live = true
        wake('live')
      },
      onDown: () => {
        live = false
      },
    })
    return {
      get live() {
        return live
      },
      close: () => {
        live = false
        void socket.close()
      },
    }
  }
}
