import type { FeatureHost } from '../http/host.ts'
import { registerRpcRoutes } from './routes.ts'
import { RpcService } from './service.ts'

declare module '../http/host.ts' {
  interface FeatureServices {
    /** The JSON-RPC proxy (admission, cache, coalescing, upstreams), shared by HTTP and WebSocket. */
    rpc: RpcService
  }
}

/** JSON-RPC over HTTP (spec 4.1): the proxy service and POST /v1/rpc/{chain}/{network}. */
export function registerRpc(host: FeatureHost): RpcService {
  const { ctx } = host
  const rpc = new RpcService(ctx.metrics, { redis: ctx.redis, logger: ctx.logger })
  host.services.rpc = rpc
  registerRpcRoutes(host.app, { rpc, charger: ctx.charger })
  return rpc
}
