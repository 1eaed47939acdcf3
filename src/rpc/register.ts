import type { FeatureHost } from '../http/host.ts'
import { registerRpcRoutes } from './routes.ts'
import { RpcService } from './service.ts'

/** JSON-RPC over HTTP (docs/gateway.md): the proxy service and POST /v1/rpc/{chain}/{network}. */
export function registerRpc(host: FeatureHost): RpcService {
  const { ctx } = host
  const rpc = new RpcService(ctx.metrics, { redis: ctx.redis, logger: ctx.logger })
  registerRpcRoutes(host.app, { rpc, charger: ctx.charger })
  return rpc
}
