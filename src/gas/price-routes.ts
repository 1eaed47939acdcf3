import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { chainSlug } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { GasPriceService } from './price-service.ts'

const estimate = z.object({
  max_fee_gwei: z
    .string()
    .describe('maxFeePerGas to send, in gwei (the gas price on a legacy network)')
    .meta({ example: '12.5' }),
  max_priority_fee_gwei: z
    .string()
    .describe('maxPriorityFeePerGas to send, in gwei')
    .meta({ example: '1.5' }),
  estimated_seconds: z.number().int().describe('Expected wait until inclusion').meta({ example: 12 }),
})

/** The response body, for the OpenAPI document. */
const gasPrices = z.object({
  chain: z.string().describe('The network slug').meta({ example: 'ethereum' }),
  block_number: z.number().int().describe('The newest block the estimates read').meta({ example: 19000000 }),
  base_fee_gwei: z.string().describe('The base fee of the next block, in gwei').meta({ example: '11' }),
  estimates: z
    .object({
      slow: estimate.describe('Included within a minute or so'),
      standard: estimate.describe('Included in the next few blocks'),
      fast: estimate.describe('Included in the next block'),
    })
    .describe('Three speeds'),
  updated_at: z
    .string()
    .meta({ format: 'date-time', example: '2026-11-26T10:00:00.000Z' })
    .describe('When the estimates were computed'),
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
