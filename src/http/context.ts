import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import type { RouteMeta } from './route-meta.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook for every route that is not public. */
    caller?: Caller
    /** Whether the rate-limit headers were already set for this request. */
    charged?: boolean
    /** The network the route's path names, resolved by the gate (http/pipeline.ts). */
    network?: Network
    /** Path parameters, query and body as the route's schemas parsed them (the gate). */
    input?: { params: unknown; query: unknown; body: unknown }
    /** Metrics label a route may refine (the RPC route sets the JSON-RPC method). */
    metricMethod?: string
  }
  interface FastifyContextConfig {
    /** What a route declares (http/route.ts): access, network binding, input schemas. */
    route?: RouteMeta
  }
}
