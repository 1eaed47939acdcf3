import { Pool } from 'undici'
import { z } from 'zod'
import type { RpcOutcome } from '../rpc/jsonrpc.ts'

/** A transport-level failure: the upstream did not give a usable JSON-RPC answer. */
export class UpstreamError extends Error {
  constructor(
    readonly kind: 'connect' | 'timeout' | 'http' | 'invalid' | 'rate_limited',
    message: string,
    readonly upstream: string,
  ) {
    super(message)
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

/** One upstream node over HTTP, through a keep-alive connection pool. */
export class HttpUpstream {
  readonly id: string
  private readonly pool: Pool
  private readonly path: string
  private readonly headers: Record<string, string>

  constructor(
    readonly url: string,
    opts: { connections?: number; label?: string } = {},
  ) {
    const u = new URL(url)
    this.id = opts.label ?? `${u.host}${u.pathname === '/' ? '' : u.pathname}`
    this.pool = new Pool(u.origin, {
      connections: opts.connections ?? 128,
      keepAliveTimeout: 30_000,
      connect: { timeout: 5_000 },
    })
    this.path = `${u.pathname}${u.search}`
    this.headers = { 'content-type': 'application/json' }
    if (u.username) {
      this.headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
    }
  }

  /** One call with a deadline. Resolves with the node's result or JSON-RPC error; rejects with UpstreamError. */
  async call(method: string, params: readonly unknown[], timeoutMs: number): Promise<RpcOutcome> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params })
    const text = await this.post(body, timeoutMs)
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      throw new UpstreamError('invalid', `upstream ${this.id} answered with invalid JSON`, this.id)
    }
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

  private async post(body: string, deadlineMs: number): Promise<string> {
    // Budgets are computed from fractional latencies; timers want whole milliseconds.
    const timeoutMs = Math.max(1, Math.ceil(deadlineMs))
    const signal = AbortSignal.timeout(timeoutMs)
    let res: Awaited<ReturnType<Pool['request']>>
    try {
      res = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: this.headers,
        body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
    } catch (err) {
      throw this.transportError(err, signal)
    }
    let text: string
    try {
      text = await res.body.text()
    } catch (err) {
      throw this.transportError(err, signal)
    }
    if (res.statusCode === 429) {
      throw new UpstreamError('rate_limited', `upstream ${this.id} answered HTTP 429`, this.id)
    }
    if (res.statusCode >= 500) {
      throw new UpstreamError('http', `upstream ${this.id} answered HTTP ${res.statusCode}`, this.id)
    }
    return text
  }

  private transportError(err: unknown, signal: AbortSignal): UpstreamError {
    if (signal.aborted)
      return new UpstreamError('timeout', `upstream ${this.id} did not answer in time`, this.id)
    const e = err as { code?: string; message?: string; cause?: { code?: string } }
    const code = e.code ?? e.cause?.code ?? 'error'
    return new UpstreamError('connect', `upstream ${this.id} unreachable (${code})`, this.id)
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => {})
  }
}
