import WebSocket from 'ws'
import type { Logger } from '../logger.ts'

/** One subscription Halyard keeps open upstream, whatever happens to the connection. */
export interface UpstreamSubscription {
  /** `eth_subscribe` params, e.g. `['newHeads']`. */
  readonly params: readonly unknown[]
  onPush(result: unknown): void
  /** The upstream acknowledged the subscription (first time or after a reconnect). */
  onLive(): void
  /** The connection is gone; pushes stop until the next onLive. */
  onDown(): void
}

export interface UpstreamSocketOptions {
  /** WebSocket URLs of the network's upstreams, in failover order. */
  readonly urls: readonly string[]
  readonly label: string
  readonly logger: Logger
  /** A ping every this often; no pong (nor any frame) by the next ping = dead connection. */
  readonly pingIntervalMs: number
  readonly backoffMinMs: number
  readonly backoffMaxMs: number
  readonly requestTimeoutMs: number
  /** Called on every opened connection (metrics). */
  readonly onConnect?: () => void
}

/** The upstream answered a request with a JSON-RPC error (the connection itself is fine). */
class UpstreamRpcError extends Error {}

interface PendingRequest {
  resolve(result: unknown): void
  reject(err: Error): void
  timer: NodeJS.Timeout
}

/**
 * One WebSocket to the network's upstreams carrying every upstream subscription Halyard needs
 * (one per kind). Keep-alive pings detect silent deaths; a lost connection is re-opened with
 * exponential backoff on the next upstream in the list (failover), and every subscription is
 * re-established there. The socket exists only while some subscription is wanted.
 */
export class UpstreamSocket {
  private readonly wanted = new Map<string, UpstreamSubscription>()
  /** upstream subscription id → our key, for the current connection only. */
  private readonly byUpstreamId = new Map<string, string>()
  private readonly upstreamIdOf = new Map<string, string>()
  private readonly pending = new Map<number, PendingRequest>()
  private ws: WebSocket | undefined
  private open = false
  private urlIndex = 0
  private failures = 0
  private nextId = 1
  private reconnectTimer: NodeJS.Timeout | undefined
  private pingTimer: NodeJS.Timeout | undefined
  private heardSincePing = true
  private closed = false
  /** Connections opened so far (tests and metrics). */
  connects = 0

  constructor(private readonly opts: UpstreamSocketOptions) {}

  get currentUrl(): string | undefined {
    return this.open ? this.opts.urls[this.urlIndex % this.opts.urls.length] : undefined
  }

  isLive(key: string): boolean {
    return this.open && this.upstreamIdOf.has(key)
  }

  subscribe(key: string, sub: UpstreamSubscription): void {
    if (this.closed || this.wanted.has(key)) return
    this.wanted.set(key, sub)
    if (this.open) this.sendSubscribe(key)
    else if (!this.ws && !this.reconnectTimer) this.connect()
  }

  unsubscribe(key: string): void {
    if (!this.wanted.delete(key)) return
    const upstreamId = this.upstreamIdOf.get(key)
    this.upstreamIdOf.delete(key)
    if (upstreamId) this.byUpstreamId.delete(upstreamId)
    if (this.wanted.size === 0) {
      this.disconnect()
      return
    }
    if (this.open && upstreamId) this.request('eth_unsubscribe', [upstreamId]).catch(() => {})
  }

  async close(): Promise<void> {
    this.closed = true
    this.wanted.clear()
    this.disconnect()
  }

  private connect(): void {
    const url = this.opts.urls[this.urlIndex % this.opts.urls.length]!
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: 5_000 })
    this.ws = ws
    ws.on('open', () => {
      if (this.ws !== ws) return
      this.open = true
      this.connects++
      this.opts.onConnect?.()
      this.heardSincePing = true
      this.pingTimer = setInterval(() => this.keepAlive(ws), this.opts.pingIntervalMs)
      this.pingTimer.unref()
      for (const key of this.wanted.keys()) this.sendSubscribe(key)
    })
    ws.on('message', (data) => {
      this.heardSincePing = true
      this.onMessage(data.toString())
    })
    ws.on('pong', () => {
      this.heardSincePing = true
    })
    ws.on('error', (err) => {
      this.opts.logger.warn(
        { upstream: url, network: this.opts.label, err: err.message },
        'upstream websocket error',
      )
    })
    ws.on('close', () => {
      if (this.ws !== ws) return
      this.lost()
    })
  }

  private keepAlive(ws: WebSocket): void {
    if (!this.heardSincePing) {
      this.opts.logger.warn(
        { network: this.opts.label },
        'upstream websocket missed a keep-alive pong; reconnecting',
      )
      ws.terminate()
      return
    }
    this.heardSincePing = false
    ws.ping()
  }

  /** The connection dropped: tell every subscription, fail over, and retry with backoff. */
  private lost(): void {
    this.teardown()
    for (const sub of this.wanted.values()) sub.onDown()
    if (this.closed || this.wanted.size === 0) return
    // Move to the next upstream after every failure, so a dead node is left at once.
    this.urlIndex++
    const exp = Math.min(this.opts.backoffMaxMs, this.opts.backoffMinMs * 2 ** Math.min(this.failures, 16))
    this.failures++
    // The first retry after a working connection is immediate-ish; then exponential with jitter.
    const delay =
      this.failures === 1 ? this.opts.backoffMinMs : Math.round(exp / 2 + (Math.random() * exp) / 2)
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined
      if (!this.closed && this.wanted.size > 0 && !this.ws) this.connect()
    }, delay)
    this.reconnectTimer.unref()
  }

  private teardown(): void {
    this.open = false
    if (this.pingTimer) clearInterval(this.pingTimer)
    this.pingTimer = undefined
    this.byUpstreamId.clear()
    this.upstreamIdOf.clear()
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(new Error('upstream websocket closed'))
    }
    this.pending.clear()
    const ws = this.ws
    this.ws = undefined
    if (ws) {
      ws.removeAllListeners('close')
      ws.on('error', () => {})
      ws.terminate()
    }
  }

  private disconnect(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
    this.teardown()
  }

  private sendSubscribe(key: string): void {
    const sub = this.wanted.get(key)
    if (!sub) return
    const ws = this.ws
    this.request('eth_subscribe', sub.params)
      .then((id) => {
        if (this.ws !== ws || this.wanted.get(key) !== sub || typeof id !== 'string') return
        this.byUpstreamId.set(id, key)
        this.upstreamIdOf.set(key, id)
        // Only a working subscription resets the backoff: a node that accepts connections but
        // refuses subscriptions must not be hammered.
        this.failures = 0
        sub.onLive()
      })
      .catch((err: Error) => {
        this.opts.logger.warn(
          { network: this.opts.label, kind: key, err: err.message },
          'upstream eth_subscribe failed',
        )
        if (this.ws !== ws || !ws) return
        if (err instanceof UpstreamRpcError) {
          // This node refuses this kind (others on the socket are fine): ask again later.
          const retry = setTimeout(() => {
            if (this.ws === ws && this.open && this.wanted.get(key) === sub && !this.upstreamIdOf.has(key)) {
              this.sendSubscribe(key)
            }
          }, this.opts.backoffMaxMs)
          retry.unref()
        } else if (err.message !== 'upstream websocket closed') {
          // No answer in time: the connection is suspect; reconnect (on the next upstream).
          ws.terminate()
        }
      })
  }

  private request(method: string, params: readonly unknown[]): Promise<unknown> {
    const ws = this.ws
    if (!ws || !this.open) return Promise.reject(new Error('upstream websocket closed'))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`${method} timed out`))
      }, this.opts.requestTimeoutMs)
      timer.unref()
      this.pending.set(id, { resolve, reject, timer })
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }))
    })
  }

  private onMessage(text: string): void {
    let msg: unknown
    try {
      msg = JSON.parse(text)
    } catch {
      return
    }
    if (typeof msg !== 'object' || msg === null) return
    const m = msg as {
      id?: unknown
      result?: unknown
      error?: { message?: unknown }
      method?: unknown
      params?: unknown
    }
    if (typeof m.id === 'number') {
      const p = this.pending.get(m.id)
      if (!p) return
      this.pending.delete(m.id)
      clearTimeout(p.timer)
      if (m.error)
        p.reject(new UpstreamRpcError(String(m.error.message ?? 'upstream error'), { cause: m.error }))
      else p.resolve(m.result)
      return
    }
    if (m.method !== 'eth_subscription') return
    const params = m.params as { subscription?: unknown; result?: unknown } | undefined
    const key =
      typeof params?.subscription === 'string' ? this.byUpstreamId.get(params.subscription) : undefined
    if (key === undefined) return
    this.wanted.get(key)?.onPush(params!.result)
  }
}
