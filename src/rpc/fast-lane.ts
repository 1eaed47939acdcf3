import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { z } from 'zod'
import { ADMIN_TOKEN_HEADER, type Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { headerKey } from '../http/access.ts'
import { decideRequest } from '../http/access-decision.ts'
import { setRateLimitHeaders } from '../http/charge.ts'
import { corsHeaders } from '../http/cors.ts'
import { toHalyardError } from '../http/errors.ts'
import {
  type FastLane,
  type FastLaneHost,
  onBody,
  requestIdFor,
  writeAnswer,
  writeLaneError,
} from '../http/fast-lane.ts'
import { parseInput } from '../http/params.ts'
import type { ChainKind, RouteScope } from '../http/route-meta.ts'
import type { JsonRpcId } from '../jsonrpc.ts'
import type { LimitDecision } from '../limits/limiter.ts'
import type { GatewayExchange } from '../requests/recorder.ts'
import { AdmissionMemo, type Recalled } from './admission-memo.ts'
import {
  admitHttp,
  answerAdmitted,
  CACHE_HEADER,
  type EndpointDeps,
  type HttpAdmission,
  JSON_CONTENT_TYPE,
  singleAnswer,
} from './endpoint.ts'
import { hitFrame } from './envelope.ts'
import type { Execution } from './service.ts'

export interface JsonRpcLaneRoute {
  /** The route's pattern, `…/:chain/:network`: its metric label, and its prefix is what the lane takes. */
  readonly url: string
  readonly scope: RouteScope
  /** Names the route in a refusal (the Fastify route's `what`). */
  readonly what: string
  readonly kinds: readonly ChainKind[] | undefined
  /** The route's body schema, checked as the gate checks it. */
  readonly body: z.ZodType<object>
  /**
   * A body `body` accepts unchanged, told without zod; one it does not is parsed by `body`
   * (whose refusal and message stand).
   */
  readonly accepts?: (body: unknown) => boolean
}

/** Bodies Fastify would parse as JSON without a second look at the media type. */
const PLAIN_JSON = /^application\/json(;\s*charset=utf-8)?$/i

/**
 * The JSON-RPC route's fast lane (http/fast-lane.ts): a POST to `{prefix}{chain}/{network}`
 * with nothing else in the path, a key the auth cache resolved within the last second that the
 * access decision lets through (http/access-decision.ts: its allowed IPs and origins, this
 * network, the route's scope), and a Content-Length within the body limit. Everything else —
 * a refusal included — is left to Fastify, which also answers the first request of every key.
 */
export function jsonRpcFastLane(host: FastLaneHost, route: JsonRpcLaneRoute, deps: EndpointDeps): FastLane {
  const prefix = route.url.slice(0, route.url.indexOf(':chain'))
  const memo = new AdmissionMemo()
  return (req, res) => {
    const url = req.url
    if (req.method !== 'POST' || url === undefined || !url.startsWith(prefix)) return false
    // The exact `{chain}/{network}` of a configured network (lowercase slugs): a query, an
    // escape, a `;`, another segment or another case is not one, and goes to Fastify.
    const network = host.networks.findPath(url.slice(prefix.length))
    if (!network || (route.kinds && !route.kinds.includes(network.kind))) return false
    const headers = req.headers
    const key = headerKey(headers)
    const cached = key === undefined ? undefined : host.auth.cachedCaller(key)
    if (!cached) return false
    const caller = host.auth.elevate(cached, headers[ADMIN_TOKEN_HEADER], req.socket)
    const origin = headers.origin
    const refused = decideRequest({
      caller,
      network,
      scope: route.scope,
      what: route.what,
      origin,
      // Only a key with an allowed-IPs list needs the client's address (the decision reads it then).
      ip: caller.allow?.ips === undefined ? undefined : host.clientAddress(req),
    })
    if (refused !== undefined) return false
    const type = headers['content-type']
    if (type !== undefined && !PLAIN_JSON.test(type)) return false
    const length = Number(headers['content-length'])
    if (!(length > 0) || length > host.bodyLimit || headers['transfer-encoding'] !== undefined) return false
    host.metrics.recordFastLane()
    // An operator's elevated caller is a new object per request: nothing to remember it by.
    const x = new Exchange({
      host,
      route,
      deps,
      memo: caller === cached ? memo : undefined,
      req,
      res,
      network,
      caller,
      origin,
    })
    // A client that leaves before its body arrives is never served, never counted.
    onBody(req, length, (text) => answerAtOnce(x, text))
    return true
  }
}

interface ExchangeParts {
  host: FastLaneHost
  route: JsonRpcLaneRoute
  deps: EndpointDeps
  memo: AdmissionMemo | undefined
  req: IncomingMessage
  res: ServerResponse
  network: Network
  caller: Caller
  /** The request's Origin header: a browser's request gets the CORS headers. */
  origin: string | undefined
}

/**
 * One request through the lane: what it needs, and what its answer has collected so far. It is
 * also what the request explorer records (a GatewayExchange), read there at once: no second
 * object per request, and the error's message is made only if the record keeps the call.
 */
class Exchange implements GatewayExchange {
  readonly started = performance.now()
  readonly requestId: string
  readonly headers: Record<string, string>
  metricMethod = 'POST'
  /** The answer `writeAtEndOfTurn` writes (and the request explorer keeps). */
  text = ''
  /** For the request explorer: the parsed body or recalled call, the admission, failed items, a refusal's error. */
  parsed: unknown
  recalled: Recalled | undefined
  admission: HttpAdmission | undefined
  codes: (number | undefined)[] | undefined
  failure: unknown
  readonly origin: string | undefined

  readonly host: FastLaneHost
  readonly route: JsonRpcLaneRoute
  readonly deps: EndpointDeps
  readonly memo: AdmissionMemo | undefined
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly network: Network
  readonly caller: Caller

  constructor(parts: ExchangeParts) {
    const { host, req, origin } = parts
    this.host = host
    this.route = parts.route
    this.deps = parts.deps
    this.memo = parts.memo
    this.req = req
    this.res = parts.res
    this.network = parts.network
    this.caller = parts.caller
    this.origin = origin
    this.requestId = requestIdFor(req)
    this.headers = { 'x-request-id': this.requestId }
    // A browser's request (it sends Origin): the same CORS headers as Fastify's answers.
    if (origin !== undefined) Object.assign(this.headers, corsHeaders(origin))
    if (host.workerIndex !== undefined) this.headers['x-halyard-worker'] = host.workerIndex
  }

  /** The answer's HTTP status and latency, set by `record`. */
  status = 0
  latencyMs = 0

  get at(): number {
    return performance.timeOrigin + this.started
  }
  get surface(): string {
    return this.route.what
  }
  /** Made on reading for a recalled call: only the calls the explorer keeps read it. */
  get body(): unknown {
    return this.recalled ? this.recalled.body : this.parsed
  }
  get batch(): boolean {
    // A recalled call is a single call.
    return this.recalled === undefined && Array.isArray(this.parsed)
  }
  get slots(): HttpAdmission['slots'] | undefined {
    return this.admission?.slots
  }
  get answer(): string | undefined {
    return this.status < 400 ? this.text : undefined
  }
  get error(): string | undefined {
    return this.failure === undefined ? undefined : toHalyardError(this.failure, this.host.bodyLimit).message
  }

  record(status: number): void {
    const ms = performance.now() - this.started
    this.status = status
    this.latencyMs = ms
    this.host.metrics.recordHttp(this.route.url, status, this.network.slug, this.metricMethod, ms / 1000)
    this.deps.recorder?.record(this)
  }
}

/**
 * The commonest answers with the fewest promises: a single call whose result is in this
 * process's cache (none at all), or one forwarded (no `serve`, `answerAdmitted` or `runSlot`
 * step: the execution's promise, answered at the end of the turn), charged synchronously
 * (in-process limiter, an unlimited plan, or the Redis limiter's lease). The steps and their
 * order are `serve`'s: admit, charge, look up, count, write at the end of the turn. Anything
 * else goes on in `serve` from where this stopped: a refusal before the charge (answered with
 * the error found here), a batch (admitted once, here), a charge that needs Redis (already begun).
 */
function answerAtOnce(x: Exchange, text: string): void {
  const { deps, route } = x
  let admission: HttpAdmission
  const recalled = x.memo?.recall(x.caller, x.network, text)
  if (recalled) {
    x.recalled = recalled
    // The kept admission, read as this call's until the call goes on past a cache hit (`goesOn`).
    admission = recalled.kept
  } else {
    try {
      x.parsed = x.host.parseJson(text)
      const input = route.accepts?.(x.parsed) ? x.parsed : parseInput(route.body, x.parsed, 'body')
      admission = admitHttp(deps, x.caller, x.network, input)
    } catch (refused) {
      return void serve(x, { refused })
    }
    x.memo?.keep(x.caller, x.network, text, x.parsed, admission)
  }
  x.admission = admission
  const slot = admission.slots[0]!
  if (admission.batch || !slot.call) return void serve(x, { admission: goesOn(x) })
  const { request, spec } = slot.call
  const json = deps.rpc.cachedLocally(x.network, request, spec)
  x.metricMethod = admission.metricMethod
  let charge: LimitDecision | Promise<LimitDecision>
  try {
    charge = deps.charger.chargeDirect(x.caller, admission.computeUnits, route.url, x.metricMethod)
  } catch (err) {
    // The 429, as `serve` writes it: charged (counted as refused), nothing run.
    x.failure = err
    x.record(writeLaneError(x.host, x.res, err, x.headers, x.requestId))
    return
  }
  if (charge instanceof Promise) return void serve(x, { admission: goesOn(x), charge })
  const h = x.headers
  setRateLimitHeaders(h, charge)
  if (json === undefined) {
    // As `answerAdmitted` runs a single call: the answer is written at the end of the turn.
    const own = goesOn(x).slots[0]!.call!.request
    deps.rpc.run(x.network, own, spec, x.caller).then(
      (r) => forwarded(x, own.id, r),
      (err) => failed(x, err),
    )
    return
  }
  deps.rpc.countHit(x.network, spec)
  h[CACHE_HEADER] = 'HIT'
  h['content-type'] = JSON_CONTENT_TYPE
  x.text = hitFrame(recalled ? recalled.id : request.id, json)
  writeAtEndOfTurn(x)
}

/**
 * The admission of a call that goes on past the lane's cache lookup (run, or served by `serve`):
 * a recalled call's own (rpc/admission-memo.ts), made now, so nothing it does reaches the kept one.
 */
function goesOn(x: Exchange): HttpAdmission {
  if (x.recalled) x.admission = x.recalled.admission
  return x.admission!
}

/** A single call's execution, answered as `serve` answers it. */
function forwarded(x: Exchange, id: JsonRpcId, r: Execution): void {
  try {
    const answer = singleAnswer(id, r)
    if (answer.cache) x.headers[CACHE_HEADER] = answer.cache
    x.headers['content-type'] = JSON_CONTENT_TYPE
    x.text = answer.text
    x.codes = answer.codes
  } catch (err) {
    failed(x, err)
    return
  }
  writeAtEndOfTurn(x)
}

/** A charged request that failed after its charge: `serve`'s error answer. */
function failed(x: Exchange, err: unknown): void {
  x.failure = err
  x.record(writeLaneError(x.host, x.res, err, x.headers, x.requestId))
}

/**
 * What answerAtOnce did already: admitted (and perhaps begun a charge that needs Redis), or
 * found the request refused before any charge.
 */
type Begun = { admission: HttpAdmission; charge?: Promise<LimitDecision> } | { refused: unknown }

/** The Fastify route's handler and hooks, in the same order, on the raw request. */
async function serve(x: Exchange, begun: Begun) {
  const { host, deps, route, headers } = x
  let charged = 'admission' in begun && begun.charge !== undefined
  let status = 200
  try {
    if ('refused' in begun) throw begun.refused
    const { admission } = begun
    let charge: LimitDecision | Promise<LimitDecision>
    if (begun.charge) charge = begun.charge
    else {
      x.metricMethod = admission.metricMethod
      charged = true
      charge = deps.charger.chargeDirect(x.caller, admission.computeUnits, route.url, x.metricMethod)
    }
    setRateLimitHeaders(headers, charge instanceof Promise ? await charge : charge)
    const answer = await answerAdmitted(deps, admission, x.network, x.caller)
    if (answer.cache) headers[CACHE_HEADER] = answer.cache
    headers['content-type'] = JSON_CONTENT_TYPE
    x.text = answer.text
    x.codes = answer.codes
    writeAnswer(x.res, 200, headers, answer.text)
  } catch (err) {
    x.failure = err
    // Refused before the charge (bad JSON, bad envelope, scope): one request, no compute units.
    if (!charged) Object.assign(headers, await deps.charger.headersForRefusal(x.caller))
    status = writeLaneError(host, x.res, err, headers, x.requestId)
  }
  x.record(status)
}

let ready: Exchange[] = []

/**
 * Answers found at once are written in the check phase of the turn, all together, as
 * `answerAdmitted` resolves its answers (rpc/endpoint.ts): after the turn's reads, one wake-up
 * of each client instead of a write between reads.
 */
function writeAtEndOfTurn(x: Exchange): void {
  if (ready.length === 0) setImmediate(writeReady)
  ready.push(x)
}

function writeReady(): void {
  const answers = ready
  ready = []
  for (const x of answers) {
    writeAnswer(x.res, 200, x.headers, x.text)
    x.record(200)
  }
}
