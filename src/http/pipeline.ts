import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AuthService, Caller } from '../auth/service.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest } from '../errors.ts'
import type { Metrics } from '../metrics.ts'
import { makeAuthHook } from './access.ts'
import { decideRequest, refusalError } from './access-decision.ts'
import type { Charger } from './charge.ts'
import { corsHeaders, isApiPath } from './cors.ts'
import { installErrorHandling } from './errors.ts'
import { parseInput } from './params.ts'
import type { ClientAddress } from './peer.ts'
import type { ChainKind, NetworkBinding, RouteMeta } from './route-meta.ts'
import './context.ts'

export interface GateDeps {
  readonly networks: NetworkRegistry
  /** The client's address for the allowed-IPs list (http/peer.ts). */
  readonly clientAddress: ClientAddress
  readonly charger: Charger
}

const KIND_NAMES: Record<ChainKind, string> = { evm: 'EVM', solana: 'Solana' }

/** The network a route's path names, or 404 naming it. */
function resolveNetwork(
  networks: NetworkRegistry,
  binding: NetworkBinding,
  params: Readonly<Record<string, string | undefined>>,
): Network {
  if (binding.from === 'pair') return networks.get(params.chain ?? '', params.network ?? '')
  if (binding.from === 'alias') return networks.getByAlias(params[binding.param] ?? '')
  return networks.getBySlug(params[binding.param] ?? '')
}

function requireKind(network: Network, meta: RouteMeta): void {
  const kinds = meta.network?.kinds
  if (!kinds || kinds.includes(network.kind)) return
  const served = kinds.map((k) => KIND_NAMES[k]).join(' and ')
  throw invalidRequest(
    `chain ${network.slug} is a ${KIND_NAMES[network.kind]} network; ${meta.what} is available on ${served} networks only`,
  )
}

/**
 * THE check every declared route passes before its handler, in this order: network (404), the
 * access decision (403: the key's allowed IPs and origins, test key on mainnet, scope;
 * http/access-decision.ts), network kind (400), path/query/body (400), then the charge
 * (429 with the rate-limit headers; skipped when the handler charges itself). A refusal before
 * the charge costs one request and no compute units (http/errors.ts).
 */
export function gate(request: FastifyRequest, meta: RouteMeta, deps: GateDeps): void {
  if (meta.access !== 'public') {
    // The auth hook has set the caller of every route that is not public.
    const caller = request.caller as Caller
    let network: Network | undefined
    if (meta.network) {
      network = resolveNetwork(deps.networks, meta.network, request.params as Record<string, string>)
      request.network = network
    }
    const refused = decideRequest({
      caller,
      network,
      scope: meta.access.scope,
      what: meta.what,
      origin: request.headers.origin,
      // Only a key with an allowed-IPs list needs the client's address (the decision reads it then).
      ip: caller.allow?.ips === undefined ? undefined : deps.clientAddress(request.raw),
    })
    if (refused) throw refusalError(refused)
    if (network) requireKind(network, meta)
  }
  const { params, query, body } = meta.schema
  request.input = {
    params: params && meta.parseParams ? parseInput(params, request.params, 'path') : request.params,
    query: query ? parseInput(query, request.query, 'query') : request.query,
    body: body ? parseInput(body, request.body, 'body') : request.body,
  }
}

export interface PipelineDeps extends GateDeps {
  readonly auth: AuthService
  readonly metrics: Metrics
  readonly bodyLimit: number
  /** Set in a cluster worker: every response names the worker (X-Halyard-Worker). */
  readonly workerIndex?: number | undefined
}

/** A route as declared (method, path pattern, what it needs): OpenAPI and the hostile sweep read these. */
export interface DeclaredRoute {
  readonly method: string
  readonly url: string
  readonly meta: RouteMeta
}

const routesByApp = new WeakMap<FastifyInstance, readonly DeclaredRoute[]>()

/** Every route declared on `app` (HEAD twins of GET routes included). */
export function declaredRoutes(app: FastifyInstance): readonly DeclaredRoute[] {
  return routesByApp.get(app) ?? []
}

/** Methods whose body a route may need: an empty one is a 400 there, and no body elsewhere. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Whether an empty body is refused: only where the route declares a body schema. A POST such
 * as /v1/webhooks/:id/test takes none, and ordinary clients send `Content-Type:
 * application/json` on every request.
 */
export function needsBody(request: FastifyRequest): boolean {
  return BODY_METHODS.has(request.method) && request.routeOptions.config?.route?.schema.body !== undefined
}

/**
 * The request pipeline every route passes: request id (and worker), the key, the one gate,
 * metrics, and error mapping. Routes must be declared with defineRoute or definePublicRoute
 * (http/route.ts): any other route stops start-up, so no route escapes the gate.
 */
export function installPipeline(app: FastifyInstance, deps: PipelineDeps): void {
  const declared: DeclaredRoute[] = []
  routesByApp.set(app, declared)
  app.addHook('onRoute', (route) => {
    const meta = route.config?.route
    if (!meta)
      throw new Error(
        `${String(route.method)} ${route.url}: declare routes with defineRoute or definePublicRoute`,
      )
    for (const method of [route.method].flat()) declared.push({ method, url: route.url, meta })
  })

  const worker = deps.workerIndex === undefined ? undefined : String(deps.workerIndex)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    if (worker !== undefined) reply.header('x-halyard-worker', worker)
    // First, so every answer of an API path carries them, refusals (401/403/429/400) included.
    const origin = request.headers.origin
    if (origin !== undefined && isApiPath(request.url)) reply.headers(corsHeaders(origin))
    done()
  })
  app.addHook('onRequest', makeAuthHook(deps.auth))

  // Callback style: no promise per request where nothing is awaited (the RPC hot path).
  app.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const meta = request.routeOptions.config.route
    if (!meta) return done()
    try {
      gate(request, meta, deps)
    } catch (err) {
      return done(err as Error)
    }
    if (meta.access === 'public' || meta.access.cost === 'self') return done()
    const charged = deps.charger.charge(request, reply, meta.access.cost)
    if (charged) charged.then(() => done(), done)
    else done()
  })

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched')
    // Only a resolved network labels a series: raw path segments would make unbounded series.
    const network = request.network?.slug ?? ''
    const method = request.metricMethod ?? request.method
    deps.metrics.recordHttp(route, reply.statusCode, network, method, reply.elapsedTime / 1000)
    done()
  })

  installErrorHandling(app, deps.charger, deps.bodyLimit)
}
