import type { FeatureHost } from '../http/host.ts'
import { registerGasPriceRoutes } from './price-routes.ts'
import { GasPriceService } from './price-service.ts'

/** Gas price estimates (docs/gas.md): one cached estimate per network and head. */
export function registerGasPrices(host: FeatureHost): GasPriceService {
  const gas = new GasPriceService()
  registerGasPriceRoutes(host.app, gas)
  return gas
}
