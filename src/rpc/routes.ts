import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { Scope } from '../auth/scopes.ts'
import type { Charger } from '../http/charge.ts'
import { fastLaneHost } from '../http/fast-lane.ts'
import { networkPair } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { ChainKind, NetworkBinding } from '../http/route-meta.ts'
import { recordingHooks, requestRecorderOf } from '../requests/gateway-hooks.ts'
import { type EndpointDeps, jsonRpcEndpoint } from './endpoint.ts'
import { DEFAULT_MAX_BATCH } from './envelope.ts'
import { jsonRpcFastLane } from './fast-lane.ts'
import type { MethodRegistry } from './methods/spec.ts'
import type { RpcService } from './service.ts'
import { recordSurface } from './surfaces.ts'

/** What jsonRpcBody accepts (as is): the fast lane checks it without zod. */
const isJsonRpcBody = (v: unknown): v is object => typeof v === 'object' && v !== null

/** A JSON-RPC request object or a batch array; the envelope of each call is checked per call. */
export const jsonRpcBody = z.custom<object>(isJsonRpcBody, {
  message: 'body must be a JSON-RPC request object or a batch array',
})

interface Deps {
  rpc: RpcService
  charger: Charger
  maxBatch?: number
}

/**
 * A JSON-RPC surface at `url` (`…/:chain/:network`): the shared endpoint (envelope, batches,
 * per-call scope and compute units) over `registry`, or the chain kind's own registry, as a
 * Fastify route and as its fast lane (rpc/fast-lane.ts) when the app has one.
 */
export function defineJsonRpcRoute(
  app: FastifyInstance,
  route: {
    url: string
    scope: Scope | readonly [Scope, ...Scope[]]
    what: string
    /** OpenAPI's summary and description of the route (its methods are in the OpenRPC document). */
    summary?: string
    description?: string
    kinds?: readonly ChainKind[]
    registry?: MethodRegistry
    /**
     * The Alchemy-compatible root: the network named by any alias in `param`, the key in
     * `keyParam`. Such a route has no fast lane (its paths are not `…/{chain}/{network}`).
     */
    alias?: { readonly param: string; readonly keyParam: string }
    /** The path's schema when it is not `{chain, network}` (OpenAPI, the hostile sweep). */
    params?: z.ZodType
  },
  deps: Deps,
) {
  // The request explorer's recorder, when recording is on (src/requests).
  const recording = requestRecorderOf(app)
  const recorder = recording?.recorder
  const endpoint: EndpointDeps = {
    rpc: deps.rpc,
    charger: deps.charger,
    maxBatch: deps.maxBatch ?? DEFAULT_MAX_BATCH,
    ...(route.registry ? { registry: route.registry } : {}),
    ...(recorder ? { recorder } : {}),
  }
  const lanes = route.alias ? undefined : fastLaneHost(app)
  if (lanes)
    lanes.lanes.push(
      jsonRpcFastLane(
        lanes,
        {
          url: route.url,
          scope: route.scope,
          what: route.what,
          kinds: route.kinds,
          body: jsonRpcBody,
          accepts: isJsonRpcBody,
        },
        endpoint,
      ),
    )
  recordSurface(app, {
    url: route.url,
    what: route.what,
    scope: route.scope,
    kinds: route.kinds,
    registry: route.registry,
    keyInPath: route.alias !== undefined,
  })
  defineRoute(app, {
    method: 'POST',
    url: route.url,
    scope: route.scope,
    // Charged per call by the endpoint: the body decides the cost.
    cost: 'self',
    network: networkBinding(route),
    ...(route.alias ? { keyInPath: route.alias.keyParam } : {}),
    ...(recording ? { hooks: recordingHooks(recording, route.what) } : {}),
    what: route.what,
    ...(route.summary ? { summary: route.summary } : {}),
    ...(route.description ? { description: route.description } : {}),
    schema: { params: route.params ?? networkPair, body: jsonRpcBody },
    handler: jsonRpcEndpoint(endpoint),
  })
}

function networkBinding(route: {
  kinds?: readonly ChainKind[]
  alias?: { readonly param: string }
}): NetworkBinding {
  const kinds = route.kinds ? { kinds: route.kinds } : {}
  return route.alias ? { from: 'alias', param: route.alias.param, ...kinds } : { from: 'pair', ...kinds }
}

/** POST /v1/rpc/{chain}/{network} (docs/gateway.md). */
export function registerRpcRoutes(app: FastifyInstance, deps: Deps) {
  // Either scope reaches the endpoint; each call is then checked against its method's scope.
  defineJsonRpcRoute(
    app,
    {
      url: '/v1/rpc/:chain/:network',
      scope: ['rpc:read', 'rpc:write'],
      what: 'JSON-RPC',
      summary: 'JSON-RPC gateway',
      description:
        "The network's JSON-RPC (EVM or Solana) through Halyard's upstream pool: a request object or a batch array. Each call needs its method's scope (rpc:read for reads, rpc:write for sends) and costs its method's compute units; a method-level error is a 200 with a JSON-RPC error. Every method, with its scope and cost: GET /v1/openrpc.json.",
    },
    deps,
  )
}
