import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, chainSlug, pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { TokenService } from './service.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

/** Spec 4.2: token balances and token metadata. */
export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService) {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/tokens/:chain/balances/:address',
    scope: 'data:read',
    cost: 20,
    network: EVM_SLUG,
    what: 'token balances',
    schema: { params: z.object({ chain: chainSlug, address: address('address') }), query: pageQuery(50) },
    handler: ({ network, params, query }) => tokens.balances(network, params.address, query),
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/tokens/:chain/metadata/:contract',
    scope: 'data:read',
    cost: 5,
    network: EVM_SLUG,
    what: 'token metadata',
    schema: { params: z.object({ chain: chainSlug, contract: address('contract') }) },
    handler: ({ network, params }) => tokens.metadata(network, params.contract),
  })
}
