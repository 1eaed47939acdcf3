/**
 * The floors that read the call (bench/lib/floor-http.ts serves them): the key looked up, the
 * body parsed and its envelope checked, then a constant answer or a forward, each under the
 * client's id. What they spend beyond the bare floors is what reading a call costs in Node;
 * what Halyard spends beyond them is its features' cost.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Dispatcher, Pool } from 'undici'
import { newRequestId } from '../../src/http/request-id.ts'

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** The key the reading floors know (their callers send it as X-API-Key). */
export const READING_FLOOR_KEY = 'floor-key'

interface ReadCall {
  id: unknown
  method: string
  params: unknown[]
}

const refuse = (res: ServerResponse, status: number, message: string) => {
  const body = JSON.stringify({ error: { message } })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

const answer = (res: ServerResponse, text: string) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/**
 * Defers each answer to the check phase of the turn, so a turn's answers are written together
 * after its reads, as Halyard's fast lane writes them (src/rpc/fast-lane.ts): each client is woken
 * once per turn instead of between reads. Under bench load (wrk, 50 connections) this alone made
 * the constant servers answer ≈ 1.2–1.5× the req/s (docs/benchmarks.md).
 */
export function atEndOfTurn<A extends unknown[]>(write: (...args: A) => void): (...args: A) => void {
  let ready: A[] = []
  const flush = () => {
    const turn = ready
    ready = []
    for (const args of turn) write(...args)
  }
  return (...args) => {
    if (ready.length === 0) setImmediate(flush)
    ready.push(args)
  }
}

/**
 * An answer with the headers the API promises on every answer (docs/concepts.md):
 * X-RateLimit-Limit, -Remaining and -Reset, and a new X-Request-Id (made as Halyard makes it:
 * src/http/request-id.ts), the remaining count and the reset written per answer.
 */
function apiAnswer(): (res: ServerResponse, text: string) => void {
  let remaining = 2 ** 31 - 1
  return (res, text) => {
    res.writeHead(200, {
      'x-request-id': newRequestId(),
      'x-ratelimit-limit': '2147483647',
      'x-ratelimit-remaining': String(remaining--),
      'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000)),
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    })
    res.end(text)
  }
}

/**
 * The least any gateway that reads the call must do before its features: the key looked up (one
 * Map) and counted, the body parsed (JSON.parse) and its envelope checked. No limits, plans,
 * cache, coalescing, metrics, failover or request log.
 */
function readCalls(onCall: (res: ServerResponse, call: ReadCall) => void): Handler {
  const accounts = new Map([[READING_FLOOR_KEY, { calls: 0 }]])
  return (req, res) => {
    const account = accounts.get(String(req.headers['x-api-key']))
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (!account) return refuse(res, 401, 'unknown key')
      let call: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown }
      try {
        call = JSON.parse((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'))
      } catch {
        return refuse(res, 400, 'invalid JSON')
      }
      if (call.jsonrpc !== '2.0' || typeof call.method !== 'string' || !Array.isArray(call.params))
        return refuse(res, 400, 'invalid request')
      account.calls++
      onCall(res, { id: call.id ?? null, method: call.method, params: call.params })
    })
  }
}

/**
 * Sends a call upstream under the floor's own id (undici's leanest path, as the bare proxy) and
 * hands over the node's result bytes, or undefined when the call failed or the answer has no
 * result (both answered 502 by the floors).
 */
function forwarder(upstream: string): (call: ReadCall, done: (result: string | undefined) => void) => void {
  const pool = new Pool(upstream, { connections: 128, keepAliveTimeout: 30_000 })
  const headers = { 'content-type': 'application/json' }
  let nextId = 1
  return (call, done) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: call.method, params: call.params })
    const chunks: Buffer[] = []
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => {},
      onResponseStart: () => {},
      onResponseData: (_c, chunk: Buffer) => {
        chunks.push(chunk)
      },
      onResponseEnd: () => {
        const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8')
        const at = text.indexOf(',"result":')
        done(at < 0 ? undefined : text.slice(at + 10, text.lastIndexOf('}')))
      },
      onResponseError: () => done(undefined),
    }
    pool.dispatch({ path: '/', method: 'POST', headers, body }, handler)
  }
}

const NO_RESULT = 'the upstream failed or sent no result'

const framed = (id: unknown, result: string) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`

/**
 * The reading proxy: `readCalls`, then the upstream body written with the floor's own id, and the
 * client's id put back around the node's result bytes. What Halyard spends beyond this floor on a
 * forwarded call is its features' cost; what this floor spends beyond the bare proxy is what
 * reading a call costs in Node at all.
 */
export function readingProxy(upstream: string): Handler {
  const forward = forwarder(upstream)
  return readCalls((res, call) =>
    forward(call, (result) =>
      result === undefined ? refuse(res, 502, NO_RESULT) : answer(res, framed(call.id, result)),
    ),
  )
}

/**
 * The coalescing proxy: the reading proxy joining a call to one in flight with the same method
 * and params (one upstream call answers them all, each under its own id), answering with the
 * API's headers as the headers constant server does. What Node allows on the identical row
 * (one eth_blockNumber body on every connection) for a gateway that reads the call, coalesces
 * and answers as the API promises: no cache, limits, metrics, failover or request log.
 */
export function coalescingProxy(upstream: string): Handler {
  const forward = forwarder(upstream)
  const reply = apiAnswer()
  const inFlight = new Map<string, { res: ServerResponse; id: unknown }[]>()
  return readCalls((res, call) => {
    const key = `${call.method}\n${JSON.stringify(call.params)}`
    const joined = inFlight.get(key)
    if (joined) return void joined.push({ res, id: call.id })
    const waiters = [{ res, id: call.id }]
    inFlight.set(key, waiters)
    forward(call, (result) => {
      inFlight.delete(key)
      for (const w of waiters)
        if (result === undefined) refuse(w.res, 502, NO_RESULT)
        else reply(w.res, framed(w.id, result))
    })
  })
}

/**
 * The reading constant server: `readCalls`, then one result under the client's id. The floor of
 * a cached call for a gateway that reads it (Halyard's cached rows beside the bare constant).
 */
export function readingConstant(): Handler {
  return readCalls((res, call) => answer(res, framed(call.id, '"0x7a69"')))
}

/**
 * The headers constant server: the reading constant server's answer with the headers the API
 * promises on every answer (`apiAnswer`). What Node allows for a cached call answered as the API
 * promises, before any of the gateway's own work; with `endOfTurn`, written as Halyard's lane
 * writes (`atEndOfTurn`).
 */
export function headersConstant(endOfTurn = false): Handler {
  const reply = endOfTurn ? atEndOfTurn(apiAnswer()) : apiAnswer()
  return readCalls((res, call) => reply(res, framed(call.id, '"0x7a69"')))
}
