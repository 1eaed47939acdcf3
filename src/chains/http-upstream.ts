import type { ConnectionOptions } from 'node:tls'
import { z } from 'zod'
import type { RpcOutcome } from '../jsonrpc.ts'
import { type Http1Handler, Http1Pool } from '../net/http1-pool.ts'
import { RawResult, rawResultText } from './raw-answer.ts'

/** A transport-level failure: the upstream did not give a usable JSON-RPC answer. */
export class UpstreamError extends Error {
  constructor(
    readonly kind: 'connect' | 'timeout' | 'http' | 'invalid' | 'rate_limited',
    message: string,
    readonly upstream: string,
    /** For `connect`: the socket error code (ECONNREFUSED…). */
    readonly errno?: string,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'UpstreamError'
  }
}

const errorObject = z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() })
const responseSchema = z.union([
  z.object({ result: z.unknown(), error: z.undefined().optional() }).passthrough(),
  z.object({ error: errorObject }).passthrough(),
])

/** JSON-RPC error codes and messages that mean "this node is rate-limiting you". */
const RATE_LIMIT_CODES = new Set([-32005, 429])
/** -32005 also means "limit exceeded" for eth_getLogs ranges; only rate wording is a rate limit. */
const RATE_LIMIT_MESSAGE =
  /rate.?limit|too many requests|requests per|exceeded .*(capacity|rate|quota)|throttl/i

let nextId = 1

/**
 * A call's params as the JSON text of their array, when the caller has written it already (the
 * gateway writes it for its coalescing key): sent as it is, not written a second time.
 */
export type ParamsText = string & { readonly __paramsText: true }

/** A call's params: the values, or their JSON text. */
export type CallParams = readonly unknown[] | ParamsText

/**
 * A call's request text, or the rejection `JSON.stringify` would have made of an async call
 * (params it cannot write: a bigint, a cycle), so callers see a rejected promise as before.
 * Params given as their JSON text (ParamsText) are spliced in as they are.
 */
function requestBody(id: number, method: string, params: CallParams): string | Promise<never> {
  try {
    const text = typeof params === 'string' ? params : (JSON.stringify(params) ?? '[]')
    return `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${text}}`
  } catch (err) {
    return Promise.reject(err)
  }
}

/** One JSON-RPC call of a batch. */
export interface UpstreamCall {
  method: string
  params: readonly unknown[]
}

/** Why an exchange was given up when its deadline passed (never seen outside this file). */
const DEADLINE = new Error('upstream deadline')

/**
 * One POST through the pool (net/http1-pool.ts): the answer arrives whole, with no stream and no
 * promise per step. The deadline is one plain timer per call, covering the wait for a socket too.
 */
class Exchange<T> implements Http1Handler {
  private abort: ((reason: Error) => void) | undefined
  private settled = false
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly upstream: HttpUpstream,
    /** What the call makes of the answer's text (it may throw: the call then rejects with that). */
    private readonly read: (text: string) => T,
    private readonly resolve: (value: T) => void,
    private readonly reject: (err: unknown) => void,
    timeoutMs: number,
  ) {
    this.timer = setTimeout(() => this.expire(), timeoutMs)
    this.timer.unref()
  }

  /** The deadline passed: the caller hears at once, even while the request still waits for a socket. */
  private expire() {
    if (this.settled) return
    this.settled = true
    this.reject(this.upstream.timeoutError())
    this.abort?.(DEADLINE)
  }

  onStart(abort: (reason: Error) => void): void {
    this.abort = abort
  }

  onAnswer(status: number, body: Buffer): void {
    clearTimeout(this.timer)
    if (this.settled) return
    this.settled = true
    const up = this.upstream
    if (status === 429) {
      this.reject(new UpstreamError('rate_limited', `upstream ${up.id} answered HTTP 429`, up.id))
    } else if (status >= 500) {
      this.reject(new UpstreamError('http', `upstream ${up.id} answered HTTP ${status}`, up.id))
    } else {
      let value: T
      try {
        value = this.read(body.toString('utf8'))
      } catch (err) {
        this.reject(err)
        return
      }
      this.resolve(value)
    }
  }

  onError(err: Error): void {
    clearTimeout(this.timer)
    if (this.settled) return
    this.settled = true
    this.reject(this.upstream.transportError(err))
  }
}

/** One upstream node over HTTP, through a keep-alive connection pool. */
export class HttpUpstream {
  readonly id: string
  private readonly pool: Http1Pool
  /** Every request's text up to its Content-Length value: request line and fixed headers. */
  private readonly head: string

  constructor(
    readonly url: string,
    opts: { connections?: number; label?: string; tls?: ConnectionOptions } = {},
  ) {
    const u = new URL(url)
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`upstream ${url}: only http: and https: nodes are supported`)
    this.id = opts.label ?? `${u.host}${u.pathname === '/' ? '' : u.pathname}`
    this.pool = new Http1Pool(u, {
      connections: opts.connections ?? 128,
      keepAliveMs: 30_000,
      connectTimeoutMs: 5_000,
      ...(opts.tls ? { tls: opts.tls } : {}),
    })
    const auth = u.username
      ? `Authorization: Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}\r\n`
      : ''
    this.head = `POST ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n${auth}Content-Length: `
  }

  /** One call with a deadline. Resolves with the node's result or JSON-RPC error; rejects with UpstreamError. */
  call(method: string, params: CallParams, timeoutMs: number): Promise<RpcOutcome> {
    const body = requestBody(nextId++, method, params)
    return typeof body === 'string' ? this.post(body, timeoutMs, this.readOutcome) : body
  }

  /**
   * Like `call`, but a successful answer in the common frame comes back as its bytes (a
   * RawResult, parsed only if someone reads `result`): the gateway forwards it unparsed. The
   * answer is read in the exchange's last callback: no promise step of its own.
   */
  callRaw(method: string, params: CallParams, timeoutMs: number): Promise<RpcOutcome> {
    const id = nextId++
    const body = requestBody(id, method, params)
    if (typeof body !== 'string') return body
    return this.post(body, timeoutMs, (text) => {
      const json = rawResultText(text, id)
      return json === undefined ? this.outcome(this.parse(text)) : new RawResult(json)
    })
  }

  private readonly readOutcome = (text: string): RpcOutcome => this.outcome(this.parse(text))

  /**
   * Several calls as one JSON-RPC batch (one request, one answer): each call's outcome, in
   * order. An answer that is not one response per call, by id, is an UpstreamError for all.
   */
  async callBatch(calls: readonly UpstreamCall[], timeoutMs: number): Promise<RpcOutcome[]> {
    const first = nextId
    nextId += calls.length
    const body = JSON.stringify(
      calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params })),
    )
    const answers = await this.post(body, timeoutMs, this.readJson)
    if (!Array.isArray(answers) || answers.length !== calls.length)
      throw new UpstreamError('invalid', `upstream ${this.id} did not answer the batch call by call`, this.id)
    const byId = new Map<unknown, unknown>()
    for (const a of answers) if (typeof a === 'object' && a !== null) byId.set((a as { id?: unknown }).id, a)
    return calls.map((_, i) => {
      const a = byId.get(first + i)
      if (a === undefined)
        throw new UpstreamError('invalid', `upstream ${this.id} left a call of the batch unanswered`, this.id)
      return this.outcome(a)
    })
  }

  private readonly readJson = (text: string): unknown => this.parse(text)

  private parse(text: string): unknown {
    try {
      return JSON.parse(text)
    } catch {
      throw new UpstreamError('invalid', `upstream ${this.id} answered with invalid JSON`, this.id)
    }
  }

  /** One JSON-RPC response as the call's outcome; a rate-limit error is an UpstreamError. */
  private outcome(parsed: unknown): RpcOutcome {
    // Common case first, checked by hand (hot path): an object with a result and no error.
    if (typeof parsed === 'object' && parsed !== null && 'result' in parsed && !('error' in parsed)) {
      return { result: (parsed as { result: unknown }).result }
    }
    const checked = responseSchema.safeParse(parsed)
    if (!checked.success) {
      throw new UpstreamError('invalid', `upstream ${this.id} answered with no result or error`, this.id)
    }
    const value = checked.data
    if (value.error !== undefined) {
      const { code, message, data } = value.error
      if (RATE_LIMIT_CODES.has(code) && RATE_LIMIT_MESSAGE.test(message)) {
        throw new UpstreamError('rate_limited', `upstream ${this.id} is rate-limiting: ${message}`, this.id)
      }
      return { error: data === undefined ? { code, message } : { code, message, data } }
    }
    return { result: value.result }
  }

  private post<T>(body: string, deadlineMs: number, read: (text: string) => T): Promise<T> {
    // Budgets are computed from fractional latencies; timers want whole milliseconds.
    const timeoutMs = Math.max(1, Math.ceil(deadlineMs))
    return new Promise<T>((resolve, reject) => {
      const exchange = new Exchange(this, read, resolve, reject, timeoutMs)
      // Refusals (a closed pool) come back through the handler's onError too.
      this.pool.send(`${this.head}${Buffer.byteLength(body)}\r\n\r\n${body}`, exchange)
    })
  }

  timeoutError(cause?: unknown): UpstreamError {
    return new UpstreamError(
      'timeout',
      `upstream ${this.id} did not answer in time`,
      this.id,
      undefined,
      cause,
    )
  }

  transportError(err: Error & { code?: string }): UpstreamError {
    // Socket and TLS errors carry Node's code; the pool's own (a bad answer, a closed pool) theirs.
    const code = err.code ?? 'error'
    return new UpstreamError('connect', `upstream ${this.id} unreachable (${code})`, this.id, code, err)
  }

  close(): Promise<void> {
    return this.pool.close()
  }
}
