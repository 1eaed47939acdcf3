import { isIP, Socket } from 'node:net'
import { rootCertificates } from 'node:tls'
import { buildConnector, type Dispatcher, Pool } from 'undici'

/**
 * The transport under safeFetch: keep-alive connection pools (undici), one per origin and
 * checked address. The connector dials the address safeFetch checked, never the hostname, so
 * DNS is not asked again between the check and the connection; TLS still verifies the
 * certificate against the URL's hostname (SNI included). A new DNS answer gets a new pool; the
 * least recently used pools are closed past `maxPools`.
 *
 * Requests go through undici's dispatch handler, not its stream API and not node:http: a
 * webhook worker sends thousands a second, and this path takes less than half the event-loop
 * time per request that the node:http one did.
 */

export interface SendOptions {
  method: string
  headers: Record<string, string>
  body: string | Uint8Array | undefined
  /** Deadline for connecting, sending, the headers and the whole body. */
  timeoutMs: number
  maxBytes: number
  /** On a body over maxBytes: fail, or keep the first maxBytes and say so. */
  oversize: 'fail' | 'truncate'
  /** Extra CA certificates (PEM) trusted on top of the default roots. */
  ca?: string | Buffer | Array<string | Buffer>
  signal?: AbortSignal
}

export type SendResult =
  | {
      kind: 'response'
      status: number
      headers: Record<string, string>
      body: Buffer
      truncated: boolean
    }
  | { kind: 'too_large'; status: number }
  | { kind: 'timeout' | 'aborted' }
  | { kind: 'tls' | 'connect'; detail: string }

export interface SafeHttpClientOptions {
  /** Connections per pool (a webhook worker: its concurrency). */
  connectionsPerOrigin: number
  maxPools?: number
}

const TLS_ERROR = /CERT|SSL|TLS|SELF_SIGNED/i
/**
 * Why a connect still pending at the request deadline is cut. The connect window and the
 * request's own timer end at the same deadline, a few microseconds apart: whichever fires first,
 * the caller is told the deadline passed ('timeout'), not that the connection failed.
 */
const CONNECT_DEADLINE = 'connect timeout: no connection within the request deadline'

/** The URL's host without IPv6 brackets, as DNS, isIP and TLS want it. */
export function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/**
 * How long a pool's connection attempt may last: until the latest deadline of the requests sent
 * through the pool so far (a connection nobody can use any more is destroyed, not left in
 * SYN-SENT for the connector's own timeout).
 */
interface ConnectWindow {
  until: number
}

export class SafeHttpClient {
  private readonly pools = new Map<string, Pool>()
  private readonly windows = new WeakMap<Pool, ConnectWindow>()
  /** Small ids for CA bundles, so a pool key does not carry the PEM text; never reused. */
  private readonly caIds = new Map<unknown, number>()
  private nextCaId = 1

  constructor(private readonly opts: SafeHttpClientOptions) {}

  async close(): Promise<void> {
    const pools = [...this.pools.values()]
    this.pools.clear()
    await Promise.allSettled(pools.map((p) => p.destroy()))
  }

  /** Sends to `url` over a connection to `address` (already checked by the caller). */
  send(url: URL, address: string, opts: SendOptions): Promise<SendResult> {
    const pool = this.pool(url, address, opts.ca)
    const window = this.windows.get(pool)
    const until = performance.now() + opts.timeoutMs
    if (window && window.until < until) window.until = until
    return new Promise<SendResult>((resolve) => {
      let settled = false
      let controller: Dispatcher.DispatchController | undefined
      let cut: 'timeout' | 'aborted' | undefined
      let status = 0
      let headers: Record<string, string> = {}
      const chunks: Buffer[] = []
      let size = 0
      const finish = (r: SendResult) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        resolve(r)
      }
      // One timer for the whole exchange. A request still queued for a connection has no
      // controller yet: it is answered now and aborted when it reaches a socket.
      const stop = (reason: 'timeout' | 'aborted') => {
        if (cut || settled) return
        cut = reason
        finish({ kind: reason })
        controller?.abort(new Error(reason))
      }
      // Timers may fire up to a millisecond before the deadline by the performance clock that
      // measures the attempt; a timeout is only reported once the deadline has passed.
      const endAt = performance.now() + opts.timeoutMs
      const onTimer = () => {
        const rest = endAt - performance.now()
        if (rest > 0) timer = setTimeout(onTimer, Math.ceil(rest))
        else stop('timeout')
      }
      let timer = setTimeout(onTimer, opts.timeoutMs)
      const onAbort = () => stop('aborted')
      opts.signal?.addEventListener('abort', onAbort, { once: true })

      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c
          if (cut) c.abort(new Error(cut))
        },
        onResponseStart(c, statusCode, rawHeaders) {
          // 1xx informational answers come first; the final one replaces them.
          if (statusCode < 200 && statusCode >= 100) return
          status = statusCode
          headers = {}
          for (const [k, v] of Object.entries(rawHeaders)) {
            if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
          }
          if (status >= 300 && status < 400) {
            // Redirects are never followed: their body is not worth reading.
            finish({ kind: 'response', status, headers, body: Buffer.alloc(0), truncated: false })
            c.abort(new Error('redirect not followed'))
          }
        },
        onResponseData(c, chunk) {
          if (settled) return
          if (size + chunk.length > opts.maxBytes) {
            if (opts.oversize === 'truncate') {
              chunks.push(chunk.subarray(0, opts.maxBytes - size))
              finish({ kind: 'response', status, headers, body: Buffer.concat(chunks), truncated: true })
            } else finish({ kind: 'too_large', status })
            c.abort(new Error('response body over the cap'))
            return
          }
          chunks.push(chunk)
          size += chunk.length
        },
        onResponseEnd() {
          finish({
            kind: 'response',
            status,
            headers,
            body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks),
            truncated: false,
          })
        },
        onResponseError: (_c, err) => {
          if (settled) return
          const code = (err as NodeJS.ErrnoException).code ?? ''
          // No resend on a dropped connection: the receiver may have processed the request.
          // (undici retires an idle connection before the receiver's advertised keep-alive
          // timeout, which is what made node:http's stale-socket resets common.) The caller's
          // retry schedule covers a real failure.
          const detail = code || err.message
          if (err.message === CONNECT_DEADLINE) {
            finish({ kind: 'timeout' })
            return
          }
          finish(
            TLS_ERROR.test(detail) || TLS_ERROR.test(err.message)
              ? { kind: 'tls', detail }
              : { kind: 'connect', detail },
          )
        },
      }
      // undici reports a request it refuses (a closed pool, a bad header) to onResponseError.
      pool.dispatch(
        {
          path: `${url.pathname}${url.search}`,
          method: opts.method,
          headers: opts.headers,
          body: opts.body ?? null,
          // The timer above is the deadline; undici's own timers would only duplicate it.
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        handler,
      )
    })
  }

  private pool(url: URL, address: string, ca: SendOptions['ca']): Pool {
    let caId = 0
    if (ca !== undefined) {
      if (this.caIds.size > 100) this.caIds.clear()
      caId = this.caIds.get(ca) ?? this.nextCaId++
      this.caIds.set(ca, caId)
    }
    const key = `${url.origin}|${address}|${caId}`
    const found = this.pools.get(key)
    if (found) {
      // Most recently used last: eviction takes the first.
      this.pools.delete(key)
      this.pools.set(key, found)
      return found
    }
    const connector = buildConnector({
      ...(ca === undefined ? {} : { ca: [...rootCertificates, ...(Array.isArray(ca) ? ca : [ca])] }),
      // A backstop only: the request's own timer reports a timeout, and `connect` below ends an
      // attempt once no request sent through this pool can still use it.
      timeout: 300_000,
    })
    const window: ConnectWindow = { until: 0 }
    const hostname = bareHost(url)
    const servername = isIP(hostname) ? undefined : hostname
    const pool = new Pool(url.origin, {
      connections: this.opts.connectionsPerOrigin,
      pipelining: 1,
      // Idle connections are kept 30 s, not undici's 4 s, when the receiver advertises no
      // shorter Keep-Alive timeout: on a 12 s chain a webhook receiver would otherwise get a new
      // connection (and TLS handshake) for every block. A receiver that closes sooner sends a
      // FIN, and undici drops that connection before reusing it.
      keepAliveTimeout: 30_000,
      // Dial the checked address; SNI and the certificate check keep the URL's hostname.
      connect: (options, callback) =>
        connectWithin(window, connector, { ...options, hostname: address, servername }, callback),
    })
    this.windows.set(pool, window)
    this.pools.set(key, pool)
    if (this.pools.size > (this.opts.maxPools ?? 1000)) {
      const [oldKey, oldest] = this.pools.entries().next().value as [string, Pool]
      this.pools.delete(oldKey)
      void oldest.close().catch(() => {})
    }
    return pool
  }
}

type Connector = ReturnType<typeof buildConnector>

/**
 * Connects (TCP and TLS) while `window` is open: a black-holed address never answers the SYN,
 * and the attempt is destroyed at the last deadline of the requests waiting for it, so its
 * socket does not outlive them. A later request sent meanwhile extends the window.
 */
function connectWithin(
  window: ConnectWindow,
  connector: Connector,
  options: buildConnector.Options,
  callback: buildConnector.Callback,
): void {
  let done = false
  let timer: NodeJS.Timeout | undefined
  // undici's connector returns the socket it is connecting (its types say void).
  const socket: unknown = connector(options, (err, s) => {
    done = true
    clearTimeout(timer)
    // The callback's overloads want a socket or an error, never both.
    if (err) callback(err, null)
    else callback(null, s as NonNullable<typeof s>)
  })
  if (!(socket instanceof Socket)) return
  const check = () => {
    if (done) return
    const rest = window.until - performance.now()
    if (rest > 0) {
      timer = setTimeout(check, Math.ceil(rest))
      timer.unref()
      return
    }
    socket.destroy(new Error(CONNECT_DEADLINE))
  }
  check()
}
