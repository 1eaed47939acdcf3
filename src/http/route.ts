import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onErrorHookHandler,
  onRequestHookHandler,
  onResponseHookHandler,
} from 'fastify'
import { z } from 'zod'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import './context.ts'
import type {
  InputSchemas,
  NetworkBinding,
  ResponseHeader,
  RouteCost,
  RouteMeta,
  RouteResponses,
  RouteScope,
} from './route-meta.ts'

/**
 * How a route declares what it needs, next to its handler: its input schemas, the scope a key
 * must hold, what it costs, and the network its path names. The one gate (http/pipeline.ts)
 * reads the declaration from the route; no path-keyed tables exist elsewhere.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export interface RouteInput<P, Q, B> {
  readonly params: P
  readonly query: Q
  readonly body: B
  readonly request: FastifyRequest
  readonly reply: FastifyReply
}

export interface RouteContext<P, Q, B, N> extends RouteInput<P, Q, B> {
  readonly caller: Caller
  /** The network the path names (when the route binds one). */
  readonly network: N
}

interface CommonSpec<P, Q, B> {
  readonly method: HttpMethod
  readonly url: string
  readonly schema?: InputSchemas<P, Q, B>
  readonly what?: string
  /** OpenAPI's summary and description: every documented route has both (src/openapi's test). */
  readonly summary?: string
  readonly description?: string
  /** A WebSocket endpoint (OpenAPI documents its 101). */
  readonly websocket?: boolean
  readonly responses?: RouteResponses
  readonly responseHeaders?: Readonly<Record<string, ResponseHeader>>
}

export interface RouteSpec<P, Q, B, N extends NetworkBinding | undefined> extends CommonSpec<P, Q, B> {
  readonly scope: RouteScope
  readonly cost: RouteCost
  readonly network?: N
  readonly keyInQuery?: boolean
  readonly keyInPath?: string
  /** Route-level hooks after the gate's: the request explorer records JSON-RPC answers with them. */
  readonly hooks?: { readonly onResponse?: onResponseHookHandler; readonly onError?: onErrorHookHandler }
  readonly handler: (x: RouteContext<P, Q, B, N extends NetworkBinding ? Network : undefined>) => unknown
}

export interface PublicRouteSpec<P, Q, B> extends CommonSpec<P, Q, B> {
  /** Runs before the input is parsed: the admin API's own token and loopback check. */
  readonly guard?: onRequestHookHandler
  readonly handler: (x: RouteInput<P, Q, B>) => unknown
}

/** A route for API keys: the gate checks network, test key, scope, kind and input, then charges. */
export function defineRoute<
  P = unknown,
  Q = unknown,
  B = unknown,
  N extends NetworkBinding | undefined = undefined,
>(app: FastifyInstance, spec: RouteSpec<P, Q, B, N>): void {
  const schema = (spec.schema ?? {}) as InputSchemas
  const meta: RouteMeta = {
    access: { scope: spec.scope, cost: spec.cost },
    network: spec.network,
    schema,
    parseParams: !provenByNetwork(schema.params, spec.network),
    what: spec.what ?? `${spec.method} ${spec.url}`,
    summary: spec.summary,
    description: spec.description,
    keyInQuery: spec.keyInQuery ?? false,
    keyInPath: spec.keyInPath,
    responses: spec.responses ?? {},
    responseHeaders: spec.responseHeaders ?? {},
    websocket: spec.websocket ?? false,
  }
  app.route({
    method: spec.method,
    url: spec.url,
    config: { route: meta },
    ...(spec.hooks?.onResponse ? { onResponse: spec.hooks.onResponse } : {}),
    ...(spec.hooks?.onError ? { onError: spec.hooks.onError } : {}),
    handler: (request, reply) => {
      const input = request.input as { params: P; query: Q; body: B }
      return spec.handler({
        ...input,
        request,
        reply,
        // The auth hook set the caller and the gate the network before any handler runs.
        caller: request.caller as Caller,
        network: request.network as N extends NetworkBinding ? Network : undefined,
      })
    },
  })
}

/**
 * Whether the path parameters are only the ones naming the network: the gate resolves those
 * first (an unknown one is a 404), so parsing them again on every call (the JSON-RPC hot path)
 * could never fail. The schema stays declared for OpenAPI and the hostile sweep.
 */
function provenByNetwork(params: z.ZodType | undefined, binding: NetworkBinding | undefined): boolean {
  if (!binding || !(params instanceof z.ZodObject)) return false
  const bound = boundParams(binding)
  return Object.keys(params.shape).every((k) => bound.includes(k))
}

/** The path parameters a network binding (and nothing else) resolves. */
function boundParams(binding: NetworkBinding): readonly string[] {
  return binding.from === 'pair' ? ['chain', 'network'] : [binding.param]
}

/** A route open without an API key (health, metrics, the admin API behind its own guard). */
export function definePublicRoute<P = unknown, Q = unknown, B = unknown>(
  app: FastifyInstance,
  spec: PublicRouteSpec<P, Q, B>,
): void {
  const meta: RouteMeta = {
    access: 'public',
    network: undefined,
    schema: (spec.schema ?? {}) as InputSchemas,
    parseParams: true,
    what: spec.what ?? `${spec.method} ${spec.url}`,
    summary: spec.summary,
    description: spec.description,
    keyInQuery: false,
    keyInPath: undefined,
    responses: spec.responses ?? {},
    responseHeaders: spec.responseHeaders ?? {},
    websocket: spec.websocket ?? false,
  }
  app.route({
    method: spec.method,
    url: spec.url,
    config: { route: meta },
    ...(spec.guard ? { onRequest: spec.guard } : {}),
    handler: (request, reply) => {
      const input = request.input as { params: P; query: Q; body: B }
      return spec.handler({ ...input, request, reply })
    },
  })
}
