import { createServer, type IncomingMessage } from 'node:http'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyBodyParser,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { AuthService } from '../auth/service.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import { errorBody } from '../errors.ts'
import type { Charger } from '../http/charge.ts'
import { answerPreflight, corsHeaders, isApiPath } from '../http/cors.ts'
import {
  answerClientError,
  answerConnect,
  MAX_PARAM_LENGTH,
  rememberRequestId,
  toHalyardError,
} from '../http/errors.ts'
import { type FastLane, setFastLaneHost } from '../http/fast-lane.ts'
import { installPipeline, needsBody } from '../http/pipeline.ts'
import { NOT_PLAIN, plainJson } from '../http/plain-json.ts'
import { requestIdFrom } from '../http/request-id.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import { type Forwarded, forwarded } from '../net/forwarded.ts'
import { LazyRequestLogger } from './lazy-logger.ts'
import '../http/context.ts'

/** proxyd uses 10 MiB; a blob-carrying raw transaction is under 1 MiB. */
export const DEFAULT_BODY_LIMIT = 5 * 1024 * 1024

/** A request's headers and body must have arrived within this (HALYARD_REQUEST_TIMEOUT). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

export interface AppDeps {
  logger: Logger
  auth: AuthService
  charger: Charger
  metrics: Metrics
  networks: NetworkRegistry
  bodyLimit?: number
  /** Deadline for a request's headers and body (default DEFAULT_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number
  /** Set in a cluster worker: every response names the worker (X-Halyard-Worker). */
  workerIndex?: number | undefined
  /**
   * Whether routes may answer their commonest requests below Fastify (http/fast-lane.ts;
   * HALYARD_FAST_LANE=0 turns it off). Default on.
   */
  fastLane?: boolean
  /**
   * Who the client is behind trusted reverse proxies (HALYARD_TRUSTED_PROXIES, src/net/forwarded.ts):
   * the access decision's client address on every transport, and `request.ip` /
   * `request.protocol`, which honour X-Forwarded-For / X-Forwarded-Proto from a trusted proxy.
   * Default: no trusted proxies (the TCP peer).
   */
  forwarded?: Forwarded
}

/**
 * The HTTP application shell: Fastify with Halyard's limits, body parsing and raw-socket error
 * answers, and the request pipeline (src/http/pipeline.ts). Features register their routes on it.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const bodyLimit = deps.bodyLimit ?? DEFAULT_BODY_LIMIT
  const requestTimeout = deps.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const lanes: FastLane[] = []
  const http = {
    requestTimeout,
    headersTimeout: Math.min(60_000, requestTimeout),
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 10))),
  }
  const app = Fastify({
    // Every request is offered to the fast lanes first; one that none takes goes to Fastify.
    serverFactory: (handler) => {
      const server = createServer(http, (req, res) => {
        // CORS preflights to the API (http/cors.ts) carry no key: answered here, before any route.
        if (req.method === 'OPTIONS' && isApiPath(req.url)) return answerPreflight(req, res)
        for (const lane of lanes) if (lane(req, res)) return
        handler(req, res)
      })
      server.requestTimeout = requestTimeout
      // Fastify's default, which it applies only to servers it makes: longer than the usual
      // load balancer's idle timeout (60 s), so a balancer never reuses a connection we closed.
      server.keepAliveTimeout = 72_000
      return server
    },
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Per-request logs would cost more than the proxying itself; errors are logged with ids.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, opts) => new LazyRequestLogger(logger, bindings, opts),
    bodyLimit,
    trustProxy: deps.forwarded ? deps.forwarded.trusts : false,
    // A body that stalls would hold its connection (and its account's place) forever. Node cuts
    // the request once its headers and body have taken longer than this, and answerClientError
    // writes the error body. Node checks every connectionsCheckingInterval (30 s by default),
    // so the check runs at a tenth of the deadline: a cut lands within 10% of it.
    requestTimeout,
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => {
      const id = requestIdFrom(req.headers['x-request-id'])
      rememberRequestId(req, id)
      return id
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Refusals the router makes before any route runs get the same error body as the rest.
    frameworkErrors: (err, request, reply) => {
      const mapped = toHalyardError(err, bodyLimit)
      const origin = request.headers.origin
      if (origin !== undefined && isApiPath(request.url)) (reply as FastifyReply).headers(corsHeaders(origin))
      ;(reply as FastifyReply)
        .status(mapped.status)
        .header('x-request-id', request.id)
        .send(errorBody(mapped))
    },
    clientErrorHandler: answerClientError,
  })

  // JSON-RPC clients often omit or mislabel Content-Type; every body is parsed as JSON. Many
  // clients and generated SDKs send `Content-Type: application/json` on every request: an empty
  // body on a DELETE (or OPTIONS) is no body, while a POST/PUT/PATCH still needs one.
  const secureJson = app.getDefaultJsonParser('error', 'error')
  const parseJson: FastifyBodyParser<string> = (request, body, done) => {
    const value = plainJson(body)
    if (value === NOT_PLAIN) secureJson(request, body, done)
    else done(null, value)
  }
  const parseBody: FastifyBodyParser<string> = (request, body, done) => {
    if (body === '' && !needsBody(request)) return done(null, undefined)
    parseJson(request, body, done)
  }
  // text/plain too: Fastify's own parser would hand the route a string.
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseBody)
  app.addContentTypeParser('*', { parseAs: 'string' }, parseBody)
  // Halyard is no proxy: CONNECT gets the error body (without a listener Node drops the socket).
  app.server.on('connect', answerConnect)

  const clientAddress = (deps.forwarded ?? forwarded([])).clientAddress
  installPipeline(app, { ...deps, bodyLimit, clientAddress })
  if (deps.fastLane !== false) {
    setFastLaneHost(app, {
      lanes,
      auth: deps.auth,
      networks: deps.networks,
      clientAddress,
      bodyLimit,
      workerIndex: deps.workerIndex === undefined ? undefined : String(deps.workerIndex),
      parseJson: (text) => {
        let outcome: { err: Error | null; value?: unknown } = { err: null }
        // Both parsers answer synchronously and read nothing from the request.
        parseJson(undefined as unknown as FastifyRequest, text, (err, value) => {
          outcome = { err, value }
        })
        if (outcome.err) throw outcome.err
        return outcome.value
      },
      metrics: deps.metrics,
      logger: deps.logger,
    })
  }
  return app
}
