import { connect as connectTcp, isIP, type Socket } from 'node:net'
import { type ConnectionOptions, connect as connectTls, TLSSocket } from 'node:tls'
import { Http1Answer } from './http1-answer.ts'
import { Http1Error } from './http1-error.ts'

export { Http1Error }

/**
 * What a POST through an Http1Pool reports, once each: `onStart` when it is queued or on a socket
 * (with the way to give it up), then either `onAnswer` with the whole body or `onError`.
 */
export interface Http1Handler {
  onStart(abort: (reason: Error) => void): void
  onAnswer(status: number, body: Buffer): void
  onError(err: Error): void
}

export interface Http1PoolOptions {
  /** Sockets open at once, busy and idle together; calls past it wait in order. */
  connections: number
  /** An idle socket is closed after this long unused. */
  keepAliveMs: number
  /** A socket that has not connected by then fails its call. */
  connectTimeoutMs: number
  /** TLS settings for https: origins (tests pass their own `ca`). */
  tls?: ConnectionOptions
}

interface Waiting {
  text: string
  handler: Http1Handler
  /** Given up (its deadline passed) before a socket took it. */
  dropped: boolean
}

/**
 * Keep-alive HTTP/1.1 POSTs to one origin, for JSON-RPC nodes: one call per socket at a time, the
 * request written in one piece, the answer framed by Content-Length or chunked encoding (or the
 * socket's end) and handed over whole. It does what the gateway's upstream calls need and no
 * more: no redirects, no compression, no pipelining, no retries (a failed call fails over to
 * another node instead). undici's general client spent ≈ 10 µs of CPU per forwarded call on the
 * same work (bench:rpc-ab's socket proxy floor; docs/benchmarks.md).
 */
export class Http1Pool {
  private readonly idle: Connection[] = []
  /** Calls waiting for a socket, oldest at `queueHead` (taken ones are cleared, not shifted). */
  private readonly queue: (Waiting | undefined)[] = []
  private queueHead = 0
  private open = 0
  private closing: { done: Promise<void>; resolve: () => void } | undefined
  private readonly sweep: NodeJS.Timeout
  private readonly host: string
  private readonly port: number
  private readonly secure: boolean
  /** Sockets with a request to write in this turn's check phase (see `schedule`). */
  private unsent: Connection[] = []
  private flushing = false

  constructor(
    origin: URL,
    private readonly opts: Http1PoolOptions,
  ) {
    this.secure = origin.protocol === 'https:'
    // URL keeps an IPv6 host in brackets; sockets want it bare.
    this.host = origin.hostname.replace(/^\[(.*)\]$/, '$1')
    this.port = Number(origin.port || (this.secure ? 443 : 80))
    // One timer for every idle socket, not one per call: a socket unused for keepAliveMs is closed.
    this.sweep = setInterval(() => this.closeStale(), Math.min(1_000, opts.keepAliveMs))
    this.sweep.unref()
  }

  /** Sends `text` (a whole HTTP/1.1 request) on an idle socket, a new one, or when one frees up. */
  send(text: string, handler: Http1Handler): void {
    if (this.closing) {
      handler.onError(new Http1Error('ECLOSED', 'the upstream pool is closed'))
      return
    }
    const conn = this.takeIdle() ?? (this.open < this.opts.connections ? this.connect() : undefined)
    if (conn) {
      conn.send(text, handler)
      return
    }
    const waiting: Waiting = { text, handler, dropped: false }
    this.queue.push(waiting)
    handler.onStart((reason) => {
      if (waiting.dropped) return
      waiting.dropped = true
      handler.onError(reason)
    })
  }

  /**
   * Requests are written in the check phase (setImmediate), once the poll phase has run every
   * callback that was ready, not at once; the wait is the rest of one turn of the event loop.
   * - The node gets a turn's requests together instead of one at a time as the gateway works
   *   through its clients. anvil, sharing bench:rpc-ab's two cores with the gateway, woke once
   *   per call and spent ≈ 1.5× the CPU per call when each request was written at once
   *   (docs/benchmarks.md); undici reuses a socket a turn later too.
   * - A FIN that the node sent on an idle socket a call took in the same turn is read before the
   *   request is written: the call goes to another socket instead of failing.
   */
  schedule(conn: Connection): void {
    this.unsent.push(conn)
    if (this.flushing) return
    this.flushing = true
    setImmediate(this.flush)
  }

  private readonly flush = (): void => {
    this.flushing = false
    const list = this.unsent
    this.unsent = []
    for (const conn of list) conn.write()
  }

  /** The most recently used idle socket the node has not been about to close (the sweep runs once a second). */
  private takeIdle(): Connection | undefined {
    const now = performance.now()
    let conn = this.idle.pop()
    while (conn && now - conn.idleSince > this.maxIdleMs(conn)) {
      conn.destroy()
      conn = this.idle.pop()
    }
    return conn
  }

  private maxIdleMs(conn: Connection): number {
    return Math.min(this.opts.keepAliveMs, conn.serverKeepAliveMs)
  }

  private connect(): Connection {
    this.open++
    const socket = this.secure
      ? connectTls({
          host: this.host,
          port: this.port,
          servername: isIP(this.host) === 0 ? this.host : undefined,
          ALPNProtocols: ['http/1.1'],
          ...this.opts.tls,
        })
      : connectTcp({ host: this.host, port: this.port })
    return new Connection(socket, this, this.opts.connectTimeoutMs)
  }

  /** A socket finished its call and may carry another: the next waiting call, or the idle list. */
  released(conn: Connection): void {
    while (this.queueHead < this.queue.length) {
      const next = this.queue[this.queueHead]
      this.queue[this.queueHead++] = undefined
      if (this.queueHead === this.queue.length) {
        this.queue.length = 0
        this.queueHead = 0
      }
      if (next !== undefined && !next.dropped) {
        next.dropped = true
        conn.send(next.text, next.handler)
        return
      }
    }
    if (this.closing) {
      conn.destroy()
      return
    }
    conn.idleSince = performance.now()
    this.idle.push(conn)
  }

  /** A socket closed: one fewer open; a waiting call may open a new one. */
  closed(conn: Connection): void {
    this.open--
    const i = this.idle.indexOf(conn)
    if (i >= 0) this.idle.splice(i, 1)
    if (this.closing && this.open === 0) this.closing.resolve()
    // Calls waiting for a socket get a new one in its place.
    if (!this.closing && this.queueHead < this.queue.length) this.released(this.connect())
  }

  private closeStale(): void {
    const now = performance.now()
    for (const conn of [...this.idle]) if (now - conn.idleSince > this.maxIdleMs(conn)) conn.destroy()
  }

  /** Refuses new calls, lets the ones on a socket finish, fails the waiting ones, closes every socket. */
  close(): Promise<void> {
    if (!this.closing) {
      let resolve = () => {}
      const done = new Promise<void>((r) => {
        resolve = r
      })
      this.closing = { done, resolve }
      clearInterval(this.sweep)
      for (const w of this.queue.splice(0)) {
        if (w === undefined || w.dropped) continue
        w.dropped = true
        w.handler.onError(new Http1Error('ECLOSED', 'the upstream pool is closed'))
      }
      this.queueHead = 0
      for (const conn of this.idle.splice(0)) conn.destroy()
      if (this.open === 0) resolve()
    }
    return this.closing.done
  }
}

/** One socket to the origin and the call on it, if any. */
class Connection {
  idleSince = 0
  /** The request given to `send`, until the check phase writes it. */
  private unsent: string | undefined
  /** It has carried a call: a close before the next request is written is the node's idle close. */
  private reused = false
  /** How long the node said it keeps an idle socket (Keep-Alive: timeout=N), less a margin. */
  serverKeepAliveMs = Number.POSITIVE_INFINITY
  private handler: Http1Handler | undefined
  private readonly answer = new Http1Answer()
  private connected = false

  constructor(
    private readonly socket: Socket,
    private readonly pool: Http1Pool,
    connectTimeoutMs: number,
  ) {
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('end', () => this.onEnd())
    socket.on('error', (err) => this.fail(err))
    socket.on('close', () => this.onClose())
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => {
      this.connected = true
      socket.setTimeout(0)
    })
    socket.setTimeout(connectTimeoutMs, () => {
      if (!this.connected) this.fail(new Http1Error('ETIMEDOUT', 'connect timed out'))
    })
  }

  /** The call's own way to give up replaces the queue's, if it waited. */
  send(text: string, handler: Http1Handler): void {
    this.handler = handler
    handler.onStart((reason) => this.abort(handler, reason))
    this.unsent = text
    this.pool.schedule(this)
  }

  write(): void {
    const text = this.unsent
    // A socket destroyed meanwhile keeps its request: its close event sends it elsewhere.
    if (text === undefined || this.socket.destroyed) return
    this.unsent = undefined
    this.socket.write(text)
  }

  private abort(handler: Http1Handler, reason: Error): void {
    if (this.handler !== handler) return
    this.handler = undefined
    this.unsent = undefined
    // A call given up mid-answer leaves the socket's framing unknown: it is not reused.
    this.destroy()
    handler.onError(reason)
  }

  private onData(chunk: Buffer): void {
    const handler = this.handler
    if (!handler) {
      // Bytes nobody asked for: the socket's framing is lost.
      this.destroy()
      return
    }
    let done: ReturnType<Http1Answer['push']>
    try {
      done = this.answer.push(chunk)
    } catch (err) {
      this.fail(err as Error)
      return
    }
    if (done === undefined) return
    this.handler = undefined
    this.reused = true
    const { status, body, keepAlive, keepAliveMs } = done
    if (keepAliveMs !== undefined) this.serverKeepAliveMs = keepAliveMs
    if (keepAlive) this.pool.released(this)
    else this.destroy()
    handler.onAnswer(status, body)
  }

  private onEnd(): void {
    const handler = this.handler
    if (!handler) return
    // An answer framed by the socket's end (no length, not chunked) is complete now.
    const done = this.answer.end()
    if (done === undefined) {
      this.fail(new Http1Error('ECONNRESET', 'the upstream closed the connection'))
      return
    }
    this.handler = undefined
    this.destroy()
    handler.onAnswer(done.status, done.body)
  }

  private fail(err: Error): void {
    const handler = this.handler
    const unsent = this.unsent
    this.handler = undefined
    this.unsent = undefined
    this.destroy()
    if (!handler) return
    // Not written yet to a socket the node closed while idle: nothing reached the node, so the
    // call may go on another socket. A new socket failing fails its call (no loop of connects).
    if (unsent !== undefined && this.reused) this.pool.send(unsent, handler)
    else handler.onError(err)
  }

  private onClose(): void {
    if (this.handler) this.fail(new Http1Error('ECONNRESET', 'the upstream closed the connection'))
    this.pool.closed(this)
  }

  destroy(): void {
    if (!this.socket.destroyed) this.socket.destroy()
  }
}
