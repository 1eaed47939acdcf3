import { invalidRequest } from '../errors.ts'
import type { FeatureHost } from '../http/host.ts'
import { networkPair } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { RpcService } from '../rpc/service.ts'
import { WsService } from './service.ts'

/**
 * WebSocket subscriptions (docs/websocket.md) on the HTTP server itself: the 'upgrade' event is handled
 * here (Fastify does not route upgrades), authorised before the handshake, and every client is
 * closed with 1001 before the server stops.
 */
export function registerWs(host: FeatureHost, deps: { rpc: RpcService }): WsService {
  const { ctx, app } = host
  const service = new WsService({
    auth: ctx.auth,
    networks: ctx.networks,
    clientAddress: ctx.forwarded.clientAddress,
    rpc: deps.rpc,
    charger: ctx.charger,
    logger: ctx.logger,
    metrics: ctx.metrics,
  })
  app.server.on('upgrade', (req, socket, head) => {
    void service.handleUpgrade(req, socket, head)
  })
  // A plain GET (no upgrade) is authenticated like any route, then told what the path is for.
  defineRoute(app, {
    method: 'GET',
    url: '/v1/ws/:chain/:network',
    summary: 'WebSocket endpoint',
    description:
      'Upgrade to a WebSocket speaking JSON-RPC 2.0: the same methods, scopes and compute units as `/v1/rpc`, plus eth_subscribe (newHeads, logs, newPendingTransactions) and eth_unsubscribe. A plain GET without the upgrade is refused with 400 saying so. Browsers pass the key as `?apiKey=`.',
    scope: 'any-key',
    cost: 1,
    keyInQuery: true,
    websocket: true,
    schema: { params: networkPair },
    handler: () => {
      throw invalidRequest(
        'this endpoint needs a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)',
      )
    },
  })
  // Upgraded sockets would keep server.close() waiting: end them before Fastify closes.
  app.addHook('preClose', async () => service.shutdown())
  host.addTask({ name: 'websocket subscriptions', stop: () => service.shutdown() })
  return service
}
