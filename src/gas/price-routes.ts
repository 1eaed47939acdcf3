import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { chainSlug } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { GasPriceService } from './price-service.ts'

/** Spec 4.6 `GET /gas/{chain}/prices`. */
export function registerGasPriceRoutes(app: FastifyInstance, gas: GasPriceService) {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/gas/:chain/prices',
    scope: 'data:read',
    cost: 2,
    network: { from: 'slug', param: 'chain' },
    schema: { params: z.object({ chain: chainSlug }) },
    handler: ({ network }) => gas.prices(network),
  })
}
