import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, chainSlug, pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { INDEX_RESPONSE_HEADERS, indexCoverage, stateCoverage } from '../indexer/index-coverage.ts'
import type { TokenService } from './service.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

/* Response bodies, for the OpenAPI document. Unknown values are null, never "0". */
const decimal = z.string().regex(/^\d+(\.\d+)?$/)
const tokenBalanceList = z.object({
  address: z
    .string()
    .describe('The holder asked about')
    .meta({ example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a' }),
  chain: z.string().describe('The network slug').meta({ example: 'ethereum-devnet' }),
  tokens: z
    .array(
      z.object({
        contract: z
          .string()
          .describe('The ERC-20 contract')
          .meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' }),
        symbol: z.string().nullable().describe('Its symbol').meta({ example: 'USDC' }),
        name: z.string().nullable().describe('Its name').meta({ example: 'USD Coin' }),
        decimals: z.number().int().describe('Its decimals').meta({ example: 6 }),
        balance: z.string().regex(/^\d+$/).describe('raw integer amount').meta({ example: '1500000' }),
        formatted_balance: decimal.describe('balance divided by 10^decimals').meta({ example: '1.5' }),
        usd_value: decimal
          .nullable()
          .describe('The balance in USD; null without a price')
          .meta({ example: '1.5' }),
        logo_url: z
          .string()
          .nullable()
          .describe('A logo, where configured')
          .meta({ example: 'https://example.com/tokens/usdc.png' }),
      }),
    )
    .describe('This page of tokens'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('Tokens in all pages').meta({ example: 1 }),
  index: indexCoverage,
})
const tokenMetadata = z.object({
  contract: z
    .string()
    .describe('The ERC-20 contract')
    .meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' }),
  chain: z.string().describe('The network slug').meta({ example: 'ethereum-devnet' }),
  name: z.string().nullable().describe('name() of the contract').meta({ example: 'USD Coin' }),
  symbol: z.string().nullable().describe('symbol() of the contract').meta({ example: 'USDC' }),
  decimals: z.number().int().nullable().describe('decimals() of the contract').meta({ example: 6 }),
  total_supply: z
    .string()
    .nullable()
    .describe('totalSupply(), raw integer amount')
    .meta({ example: '1000000000000' }),
  formatted_total_supply: z
    .string()
    .nullable()
    .describe('total_supply divided by 10^decimals')
    .meta({ example: '1000000' }),
  price_usd: decimal
    .nullable()
    .describe('The price in USD; null without a price')
    .meta({ example: '1.0002' }),
  market_cap_usd: decimal
    .nullable()
    .describe('price_usd times the formatted supply; null without a price')
    .meta({ example: '1000200' }),
  logo_url: z
    .string()
    .nullable()
    .describe('A logo, where configured')
    .meta({ example: 'https://example.com/tokens/usdc.png' }),
})

/** Token balances and token metadata. */
export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService, history: IndexHistory) {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/tokens/:chain/balances/:address',
    summary: 'Token balances',
    description:
      'The ERC-20 balances of `address` (tokens from the index, balances read at the head through Multicall3), with metadata and, where configured, USD prices; paginated with `page` and `limit` (50 by default, 100 at most). 20 CU.',
    scope: 'data:read',
    cost: 20,
    network: EVM_SLUG,
    what: 'token balances',
    schema: { params: z.object({ chain: chainSlug, address: address('address') }), query: pageQuery(50) },
    responses: { 200: tokenBalanceList },
    responseHeaders: INDEX_RESPONSE_HEADERS,
    // Balances are balanceOf at the head; which tokens to ask about comes from the index, so the
    // answer says from which block the index knows the address's tokens (its history scan).
    handler: async ({ network, params, query, reply, caller }) => {
      const index = stateCoverage(reply, await history.ofAddress(network, params.address, caller.accountId))
      return { ...(await tokens.balances(network, params.address, query, `${index.history_scan}`)), index }
    },
  })

  defineRoute(app, {
    method: 'GET',
    url: '/v1/tokens/:chain/metadata/:contract',
    summary: 'Token metadata',
    description:
      "An ERC-20 token's name, symbol, decimals and logo, read from the contract and cached. 5 CU.",
    scope: 'data:read',
    cost: 5,
    network: EVM_SLUG,
    what: 'token metadata',
    schema: { params: z.object({ chain: chainSlug, contract: address('contract') }) },
    responses: { 200: tokenMetadata },
    handler: ({ network, params }) => tokens.metadata(network, params.contract),
  })
}
