import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import { scopeForRoute } from '../auth/scopes.ts'
import type { AuthService } from '../auth/service.ts'
import { errorBody } from '../errors.ts'
import { routeCost } from '../limits/compute-units.ts'
import type { Logger } from '../logger.ts'
import { makeAuthHook, requireScope } from './auth-hook.ts'
import type { Charger } from './charge.ts'
import { answerClientError, installErrorHandling, MAX_PARAM_LENGTH, toHalyardError } from './error-handler.ts'
import { LazyRequestLogger } from './lazy-logger.ts'
import type { Metrics } from './metrics.ts'
import './context.ts'

/** proxyd uses 10 MiB; a blob-carrying raw transaction is under 1 MiB. */
export const DEFAULT_BODY_LIMIT = 5 * 1024 * 1024

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

export interface AppDeps {
  logger: Logger
  auth: AuthService
  charger: Charger
  metrics: Metrics
  bodyLimit?: number
  /** Set in a cluster worker: every response names the worker (X-Halyard-Worker). */
  workerIndex?: number | undefined
}

/**
 * The HTTP application shell: request ids, authentication, scope checks and charging for
 * REST routes, metrics, and error mapping. Features register their routes on it.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const bodyLimit = deps.bodyLimit ?? DEFAULT_BODY_LIMIT
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Per-request logs would cost more than the proxying itself; errors are logged with ids.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, opts) => new LazyRequestLogger(logger, bindings, opts),
    bodyLimit,
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID()
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Refusals the router makes before any route runs get the same error body as the rest.
    frameworkErrors: (err, request, reply) => {
      const mapped = toHalyardError(err, bodyLimit)
      ;(reply as FastifyReply)
        .status(mapped.status)
        .header('x-request-id', request.id)
        .send(errorBody(mapped))
    },
    clientErrorHandler: answerClientError,
  })

  // JSON-RPC clients often omit or mislabel Content-Type; every body is parsed as JSON.
  app.addContentTypeParser('*', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  const worker = deps.workerIndex === undefined ? undefined : String(deps.workerIndex)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    if (worker !== undefined) reply.header('x-halyard-worker', worker)
    done()
  })
  app.addHook('onRequest', makeAuthHook(deps.auth))

  // Scope from the one route table; then REST routes pay one charge before the handler.
  // Callback-style hooks: no promise per request where nothing is awaited (the RPC hot path).
  app.addHook('preHandler', (request, reply, done) => {
    if (!request.caller) return done()
    const route = routeLabel(request)
    const scope = scopeForRoute(route)
    if (scope) requireScope(request.caller, scope, `${request.method} ${route}`)
    if (request.routeOptions.config?.chargesItself) return done()
    const charged = deps.charger.charge(request, reply, routeCost(request.method, route))
    if (charged) charged.then(() => done(), done)
    else done()
  })

  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request)
    const network = request.metricNetwork ?? networkLabel(request)
    deps.metrics.httpRequests.inc({
      route,
      status: String(reply.statusCode),
      network,
      method: request.metricMethod ?? request.method,
    })
    deps.metrics.httpDuration.observe({ route, network }, reply.elapsedTime / 1000)
    done()
  })

  installErrorHandling(app, deps.charger, bodyLimit)
  return app
}

function routeLabel(request: FastifyRequest): string {
  return request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched')
}

function networkLabel(request: FastifyRequest): string {
  const p = request.params as Record<string, string> | undefined
  if (!p?.chain) return ''
  return p.network ? `${p.chain}/${p.network}` : p.chain
}
