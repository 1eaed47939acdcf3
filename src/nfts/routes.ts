import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, boolFlag, chainSlug, pageQuery, uint256 } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { NftService } from './service.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

/** Spec 4.3: NFT metadata, collection, owned NFTs. */
export function registerNftRoutes(app: FastifyInstance, nfts: NftService): void {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/metadata/:contract/:token_id',
    scope: 'data:read',
    cost: 10,
    network: EVM_SLUG,
    what: 'NFT metadata',
    schema: {
      params: z.object({ chain: chainSlug, contract: address('contract'), token_id: uint256('token_id') }),
      query: z.object({ refresh: boolFlag('refresh') }),
    },
    handler: ({ network, params, query }) =>
      nfts.metadata(network, params.contract, params.token_id, query.refresh),
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/collection/:contract',
    scope: 'data:read',
    cost: 10,
    network: EVM_SLUG,
    what: 'NFT collections',
    schema: { params: z.object({ chain: chainSlug, contract: address('contract') }) },
    handler: ({ network, params }) => nfts.collection(network, params.contract),
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/owned/:address',
    scope: 'data:read',
    cost: 20,
    network: EVM_SLUG,
    what: 'owned NFTs',
    schema: { params: z.object({ chain: chainSlug, address: address('address') }), query: pageQuery(50) },
    handler: ({ network, params, query }) => nfts.owned(network, params.address, query),
  })
}
