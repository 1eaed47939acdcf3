import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, boolFlag, chainSlug, pageQuery, uint256 } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { INDEX_RESPONSE_HEADERS, indexCoverage, stateCoverage } from '../indexer/index-coverage.ts'
import type { NftService } from './service.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

/* Response bodies, for the OpenAPI document. */
const standard = z.enum(['ERC721', 'ERC1155'])
const contract = z
  .string()
  .describe('The NFT contract')
  .meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' })
const tokenId = z.string().describe('The token id, decimal').meta({ example: '1' })
const network = z.string().describe('The network slug').meta({ example: 'ethereum-devnet' })
const nftMetadata = z.object({
  contract,
  token_id: tokenId,
  chain: network,
  name: z.string().nullable().describe("The metadata's name").meta({ example: 'Bored Ape #8817' }),
  description: z
    .string()
    .nullable()
    .describe("The metadata's description")
    .meta({ example: 'A unique ape with gold fur.' }),
  image_url: z
    .string()
    .nullable()
    .describe('The image as the metadata gives it (ipfs://, ar://, https://)')
    .meta({ example: 'ipfs://QmYDvPAXtiJg7s8JdRBSLWdgSphQdac8j1YuQNNxcGE1hg' }),
  image_gateway_url: z
    .string()
    .nullable()
    .describe('The image through an HTTP gateway')
    .meta({ example: 'https://ipfs.io/ipfs/QmYDvPAXtiJg7s8JdRBSLWdgSphQdac8j1YuQNNxcGE1hg' }),
  standard: standard.describe('ERC721 or ERC1155'),
  owner: z
    .string()
    .nullable()
    .describe('The owner (ERC-721); null for ERC-1155')
    .meta({ example: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' }),
  traits: z
    .array(
      z.object({
        trait_type: z.string().describe('The attribute').meta({ example: 'Fur' }),
        value: z.string().describe('Its value, as a string').meta({ example: 'Solid Gold' }),
      }),
    )
    .describe("The metadata's attributes"),
  token_uri: z
    .string()
    .nullable()
    .describe('What tokenURI (or uri) answered')
    .meta({ example: 'ipfs://QmeSjSinHpPnmXmspMjwiXyN6zS4E9zccariGR3jxcaWtq/8817' }),
  metadata: z.record(z.string(), z.unknown()).nullable().describe('The metadata JSON as read'),
  metadata_error: z
    .string()
    .nullable()
    .describe('Why the metadata could not be read; null when it was')
    .meta({ example: null }),
})
const nftCollection = z.object({
  contract,
  chain: network,
  name: z
    .string()
    .nullable()
    .describe('The collection name the contract reports')
    .meta({ example: 'BoredApeYachtClub' }),
  symbol: z.string().nullable().describe('Its symbol').meta({ example: 'BAYC' }),
  standard: standard.describe('ERC721 or ERC1155'),
  total_supply: z
    .union([z.number().int(), z.string()])
    .describe('Tokens in existence, where the contract reports it')
    .meta({ example: 10000 }),
  num_owners: z.number().int().describe('Distinct holders in the index').meta({ example: 5512 }),
  floor_price_eth: z.string().nullable().describe('Not tracked by Halyard: null').meta({ example: null }),
  floor_price_usd: z.string().nullable().describe('Not tracked by Halyard: null').meta({ example: null }),
  banner_url: z
    .string()
    .nullable()
    .describe("From the contract's metadata (contractURI)")
    .meta({ example: 'https://example.com/banner.png' }),
  image_url: z
    .string()
    .nullable()
    .describe("From the contract's metadata (contractURI)")
    .meta({ example: 'https://example.com/logo.png' }),
  description: z
    .string()
    .nullable()
    .describe("From the contract's metadata (contractURI)")
    .meta({ example: '10,000 unique apes.' }),
})
const ownedNfts = z.object({
  address: z
    .string()
    .describe('The owner asked about')
    .meta({ example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a' }),
  chain: network,
  nfts: z
    .array(
      z.object({
        contract,
        token_id: tokenId,
        name: z
          .string()
          .nullable()
          .describe("The token's name, where its metadata was read")
          .meta({ example: 'Bored Ape #8817' }),
        collection_name: z
          .string()
          .nullable()
          .describe("The contract's name")
          .meta({ example: 'BoredApeYachtClub' }),
        image_url: z
          .string()
          .nullable()
          .describe("The token's image")
          .meta({ example: 'ipfs://QmYDvPAXtiJg7s8JdRBSLWdgSphQdac8j1YuQNNxcGE1hg' }),
        standard: standard.describe('ERC721 or ERC1155'),
        balance: z.string().describe('How many the address holds (1 for ERC-721)').meta({ example: '1' }),
      }),
    )
    .describe('This page of NFTs'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('NFTs in all pages').meta({ example: 42 }),
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
      query: z.object({
        refresh: boolFlag('refresh', 'true: read the tokenURI again instead of the cached metadata'),
      }),
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
    responseHeaders: INDEX_RESPONSE_HEADERS,
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
    responseHeaders: INDEX_RESPONSE_HEADERS,
    handler: async ({ network, params, query, reply, caller }) => {
      const index = stateCoverage(reply, await history.ofAddress(network, params.address, caller.accountId))
      return { ...(await nfts.owned(network, params.address, query)), index }
    },
  })
}
