import type { Caller } from '../auth/service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook for every authenticated route. */
    caller?: Caller
    /** Whether the rate-limit headers were already set for this request. */
    charged?: boolean
    /** Metrics labels a route may refine (the RPC route sets network and method). */
    metricNetwork?: string
    metricMethod?: string
  }
  interface FastifyContextConfig {
    /** Routes open without an API key: health, metrics, admin (which has its own token). */
    public?: boolean
    /** The route charges compute units itself (JSON-RPC: the cost depends on the body). */
    chargesItself?: boolean
  }
}
