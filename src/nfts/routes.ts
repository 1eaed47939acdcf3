import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, boolFlag, chainSlug, pageQuery, uint256 } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { indexCoverage, stateCoverage } from '../indexer/index-coverage.ts'
import type { NftService } from './service.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

/* Response bodies, for the OpenAPI document. */
const standard = z.enum(['ERC721', 'ERC1155'])
const nftMetadata = z.object({
  contract: z.string(),
  token_id: z.string(),
  chain: z.string(),
  name: z.string().nullable(),
  description: z.string().nullable(),
  image_url: z.string().nullable(),
  image_gateway_url: z.string().nullable(),
  standard,
  owner: z.string().nullable(),
  traits: z.array(z.object({ trait_type: z.string(), value: z.string() })),
  token_uri: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  metadata_error: z.string().nullable(),
})
const nftCollection = z.object({
  contract: z.string(),
  chain: z.string(),
  name: z.string().nullable(),
  symbol: z.string().nullable(),
  standard,
  total_supply: z.union([z.number().int(), z.string()]),
  num_owners: z.number().int(),
  floor_price_eth: z.string().nullable(),
  floor_price_usd: z.string().nullable(),
  banner_url: z.string().nullable(),
  image_url: z.string().nullable(),
  description: z.string().nullable(),
})
const ownedNfts = z.object({
  address: z.string(),
  chain: z.string(),
  nfts: z.array(
    z.object({
      contract: z.string(),
      token_id: z.string(),
      name: z.string().nullable(),
      collection_name: z.string().nullable(),
      image_url: z.string().nullable(),
      standard,
      balance: z.string(),
    }),
  ),
  page: z.number().int(),
  total: z.number().int(),
  index: indexCoverage,
})

/** NFT metadata, collection, owned NFTs. */
export function registerNftRoutes(app: FastifyInstance, nfts: NftService, history: IndexHistory): void {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/metadata/:contract/:token_id',
    summary: 'NFT metadata',
    description:
      "The token's metadata (name, description, image, attributes) read from its tokenURI (ipfs:// and ar:// through gateways), cached; `refresh=true` reads it again. ERC-721 and ERC-1155.",
    scope: 'data:read',
    cost: 10,
    network: EVM_SLUG,
    what: 'NFT metadata',
    schema: {
      params: z.object({ chain: chainSlug, contract: address('contract'), token_id: uint256('token_id') }),
      query: z.object({ refresh: boolFlag('refresh') }),
    },
    responses: { 200: nftMetadata },
    handler: ({ network, params, query }) =>
      nfts.metadata(network, params.contract, params.token_id, query.refresh),
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/collection/:contract',
    summary: 'NFT collection',
    description:
      "A collection's name, symbol, standard (ERC721 or ERC1155), total supply where the contract reports one, and its contract metadata.",
    scope: 'data:read',
    cost: 10,
    network: EVM_SLUG,
    what: 'NFT collections',
    schema: { params: z.object({ chain: chainSlug, contract: address('contract') }) },
    responses: { 200: nftCollection },
    // Owner counts come from the index: the headers say from which block it is complete.
    handler: async ({ network, params, reply }) => {
      stateCoverage(reply, await history.ofNetwork(network))
      return nfts.collection(network, params.contract)
    },
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/nfts/:chain/owned/:address',
    summary: 'NFTs owned by an address',
    description:
      'The NFTs `address` holds, from the index, paginated with `page` and `limit` (50 by default, 100 at most), optionally for some contracts only. Index coverage headers say how complete the answer is while a history scan runs.',
    scope: 'data:read',
    cost: 20,
    network: EVM_SLUG,
    what: 'owned NFTs',
    schema: { params: z.object({ chain: chainSlug, address: address('address') }), query: pageQuery(50) },
    responses: { 200: ownedNfts },
    handler: async ({ network, params, query, reply, caller }) => {
      const index = stateCoverage(reply, await history.ofAddress(network, params.address, caller.accountId))
      return { ...(await nfts.owned(network, params.address, query)), index }
    },
  })
}
