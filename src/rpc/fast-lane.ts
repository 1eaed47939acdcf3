import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { z } from 'zod'
import type { Scope } from '../auth/scopes.ts'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { headerKey } from '../http/access.ts'
import { rateLimitHeaders } from '../http/charge.ts'
import {
  type FastLane,
  type FastLaneHost,
  readBody,
  requestIdFor,
  writeAnswer,
  writeLaneError,
} from '../http/fast-lane.ts'
import { parseInput } from '../http/params.ts'
import type { ChainKind } from '../http/route.ts'
import { admitHttp, answerAdmitted, CACHE_HEADER, type EndpointDeps, JSON_CONTENT_TYPE } from './endpoint.ts'

export interface JsonRpcLaneRoute {
  /** The route's pattern, `…/:chain/:network`: its metric label, and its prefix is what the lane takes. */
  readonly url: string
  readonly scopes: readonly Scope[]
  readonly kinds: readonly ChainKind[] | undefined
  /** The route's body schema, checked as the gate checks it. */
  readonly body: z.ZodType<object>
}

/** Bodies Fastify would parse as JSON without a second look at the media type. */
const PLAIN_JSON = /^application\/json(;\s*charset=utf-8)?$/i

/**
 * The JSON-RPC route's fast lane (http/fast-lane.ts): a POST to `{prefix}{chain}/{network}`
 * with nothing else in the path, a key the auth cache resolved within the last second that may
 * use this network and holds the route's scope, and a Content-Length within the body limit.
 * Everything else is left to Fastify, which also answers the first request of every key.
 */
export function jsonRpcFastLane(host: FastLaneHost, route: JsonRpcLaneRoute, deps: EndpointDeps): FastLane {
  const prefix = route.url.slice(0, route.url.indexOf(':chain'))
  return (req, res) => {
    const url = req.url
    if (req.method !== 'POST' || url === undefined || !url.startsWith(prefix)) return false
    const slash = url.indexOf('/', prefix.length)
    if (slash < 0 || url.indexOf('/', slash + 1) >= 0 || /[?%#;]/.test(url)) return false
    const network = host.networks.find(url.slice(prefix.length, slash), url.slice(slash + 1))
    if (!network || (route.kinds && !route.kinds.includes(network.kind))) return false
    const key = headerKey(req.headers)
    const caller = key === undefined ? undefined : host.auth.cachedCaller(key)
    if (!caller || (caller.env === 'test' && network.isMainnet)) return false
    if (!route.scopes.some((s) => caller.scopes.has(s))) return false
    const type = req.headers['content-type']
    if (type !== undefined && !PLAIN_JSON.test(type)) return false
    const length = Number(req.headers['content-length'])
    if (!(length > 0) || length > host.bodyLimit || req.headers['transfer-encoding'] !== undefined)
      return false
    host.metrics.recordFastLane()
    void serve(host, route, deps, { req, res, network, caller, length })
    return true
  }
}

interface Exchange {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly network: Network
  readonly caller: Caller
  readonly length: number
}

/** The Fastify route's handler and hooks, in the same order, on the raw request. */
async function serve(host: FastLaneHost, route: JsonRpcLaneRoute, deps: EndpointDeps, x: Exchange) {
  const started = performance.now()
  const requestId = requestIdFor(x.req)
  const headers: Record<string, string> = { 'x-request-id': requestId }
  if (host.workerIndex !== undefined) headers['x-halyard-worker'] = host.workerIndex
  let metricMethod = 'POST'
  let charged = false
  let status = 200
  try {
    const text = await readBody(x.req, x.length)
    // The client left before its body arrived: never served, never counted.
    if (text === undefined) return
    const body = parseInput(route.body, host.parseJson(text), 'body')
    const admission = admitHttp(deps, x.caller, x.network, body)
    metricMethod = admission.metricMethod
    charged = true
    const charge = deps.charger.chargeDirect(x.caller, admission.computeUnits, route.url, metricMethod)
    Object.assign(headers, rateLimitHeaders(charge instanceof Promise ? await charge : charge))
    const answer = await answerAdmitted(deps, admission, x.network, x.caller)
    if (answer.cache) headers[CACHE_HEADER] = answer.cache
    headers['content-type'] = JSON_CONTENT_TYPE
    writeAnswer(x.res, 200, headers, answer.text)
  } catch (err) {
    // Refused before the charge (bad JSON, bad envelope, scope): one request, no compute units.
    if (!charged) Object.assign(headers, await deps.charger.headersForRefusal(x.caller))
    status = writeLaneError(host, x.res, err, headers, requestId)
  }
  host.metrics.recordHttp(
    route.url,
    status,
    x.network.slug,
    metricMethod,
    (performance.now() - started) / 1000,
  )
}
