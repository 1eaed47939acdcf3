import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import type { GasPriceService } from './price-service.ts'

/** Spec 4.6 `GET /gas/{chain}/prices`, scoped `data:read` (src/auth/scopes.ts). */
export function registerGasPriceRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  gas: GasPriceService,
) {
  app.get('/v1/gas/:chain/prices', async (request) => {
    const { chain } = request.params as { chain: string }
    const net = networks.getBySlug(chain)
    requireNetworkAccess(request.caller!, net)
    return gas.prices(net)
  })
}
