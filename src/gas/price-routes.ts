import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { chainSlug } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { GasPriceService } from './price-service.ts'

const estimate = z.object({
  max_fee_gwei: z.string(),
  max_priority_fee_gwei: z.string(),
  estimated_seconds: z.number().int(),
})

/** The response body, for the OpenAPI document. */
const gasPrices = z.object({
  chain: z.string(),
  block_number: z.number().int(),
  base_fee_gwei: z.string(),
  estimates: z.object({ slow: estimate, standard: estimate, fast: estimate }),
  updated_at: z.string().meta({ format: 'date-time' }),
})

/** `GET /gas/{chain}/prices`. */
export function registerGasPriceRoutes(app: FastifyInstance, gas: GasPriceService) {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/gas/:chain/prices',
    summary: 'Gas price estimates',
    description:
      'Fee estimates for the next blocks from recent fee history: base fee and slow, standard and fast priority fees (EIP-1559), or legacy gas prices where the network has no base fee. 2 CU.',
    scope: 'data:read',
    cost: 2,
    network: { from: 'slug', param: 'chain' },
    schema: { params: z.object({ chain: chainSlug }) },
    responses: { 200: gasPrices },
    handler: ({ network }) => gas.prices(network),
  })
}
