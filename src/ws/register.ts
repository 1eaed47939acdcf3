import { invalidRequest } from '../errors.ts'
import type { FeatureHost } from '../server/features.ts'
import { WsService } from './service.ts'

/**
 * WebSocket subscriptions (spec 4.8) on the HTTP server itself: the 'upgrade' event is handled
 * here (Fastify does not route upgrades), authorised before the handshake, and every client is
 * closed with 1001 before the server stops.
 */
export function registerWs(host: FeatureHost): WsService {
  const { ctx, app } = host
  const service = new WsService({
    auth: ctx.auth,
    networks: ctx.networks,
    rpc: ctx.rpc,
    charger: ctx.charger,
    logger: ctx.logger,
    metrics: ctx.metrics,
  })
  app.server.on('upgrade', (req, socket, head) => {
    void service.handleUpgrade(req, socket, head)
  })
  // A plain GET (no upgrade) is authenticated like any route, then told what the path is for.
  app.get('/v1/ws/:chain/:network', async () => {
    throw invalidRequest('this endpoint needs a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)')
  })
  // Upgraded sockets would keep server.close() waiting: end them before Fastify closes.
  app.addHook('preClose', async () => service.shutdown())
  host.addTask({ name: 'websocket subscriptions', stop: () => service.shutdown() })
  return service
}
