import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { address, chainSlug, intString } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { fromBlock, INDEX_RESPONSE_HEADERS, indexCoverage, stateCoverage } from '../indexer/index-coverage.ts'
import type { TransferService } from './service.ts'
import { CATEGORIES, type Category } from './store.ts'

const EVM_SLUG = { from: 'slug', param: 'chain', kinds: ['evm'] } as const

const enumOf = <T extends string>(name: string, values: readonly [T, ...T[]], dflt: T) =>
  z
    .enum(values, { error: `${name} must be one of ${values.join(', ')}` })
    .optional()
    .transform((v) => v ?? dflt)

/** A block number as a plain decimal integer (as block_number is shown in the answers). */
const block = (name: string) =>
  z
    .string({ error: `${name} must be a block number (a decimal integer)` })
    .regex(/^\d{1,18}$/, { error: `${name} must be a block number (a decimal integer)` })
    .transform((v) => BigInt(v))
    .optional()
    .meta({ example: '0' })

const categoryList = z
  .string({ error: `category must be a comma-separated list of ${CATEGORIES.join(', ')}` })
  .max(200)
  .transform((v, ctx): Category[] => {
    const parts = v.split(',').map((p) => p.trim())
    const bad = parts.find((p) => !CATEGORIES.includes(p as Category))
    if (bad !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `category: "${bad.slice(0, 40)}" is not one of ${CATEGORIES.join(', ')}`,
      })
      return z.NEVER
    }
    return [...new Set(parts as Category[])]
  })
  .optional()
  .meta({ example: 'erc20,erc721' })

const limit = intString('limit', 1, 100, 100)

export const transferQuery = z
  .object({
    direction: enumOf('direction', ['both', 'from', 'to'], 'both').describe(
      'from: sent by the address; to: received; both (default)',
    ),
    category: categoryList.describe('default: every category the network indexes'),
    from_block: block('from_block').describe('first block (included)'),
    to_block: block('to_block').describe('last block (included)'),
    contract: address('contract').optional().describe('token contract: only its token transfers'),
    order: enumOf('order', ['desc', 'asc'], 'desc').describe('desc (newest first, default) or asc'),
    limit,
    cursor: z
      .string({ error: 'cursor must be the next_cursor of a previous page' })
      .max(200, { error: 'cursor is not a cursor this API returned (pass next_cursor as is)' })
      .optional()
      .describe('next_cursor of the previous page')
      .meta({ example: 'eyJiIjoxMjM0NTYsImkiOjB9' }),
  })
  .superRefine((q, ctx) => {
    if (q.from_block !== undefined && q.to_block !== undefined && q.from_block > q.to_block)
      ctx.addIssue({ code: 'custom', message: 'from_block must not be after to_block', path: ['from_block'] })
  })

/* Response body, for the OpenAPI document. */
const intOrNull = z.number().int().nullable()
const transferList = z.object({
  address: z
    .string()
    .describe('The address asked about')
    .meta({ example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a' }),
  chain: z.string().describe('The network slug').meta({ example: 'ethereum-devnet' }),
  transfers: z
    .array(
      z.object({
        category: z.enum(CATEGORIES as [Category, ...Category[]]).describe('What moved'),
        block_number: z.number().int().describe('The block it is in').meta({ example: 19000000 }),
        block_timestamp: z.number().int().describe('Unix seconds').meta({ example: 1767225600 }),
        tx_hash: z
          .string()
          .describe('The transaction')
          .meta({ example: '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060' }),
        tx_index: intOrNull.describe('native transfers').meta({ example: 12 }),
        trace_index: intOrNull
          .describe('native: 0 = the transaction itself, 1.. = call frames')
          .meta({ example: 0 }),
        log_index: intOrNull.describe('token transfers').meta({ example: 87 }),
        batch_index: intOrNull.describe('position in an ERC-1155 batch').meta({ example: null }),
        from: z
          .string()
          .describe('The sender')
          .meta({ example: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' }),
        to: z
          .string()
          .nullable()
          .describe('The receiver; null for a contract creation')
          .meta({ example: '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B' }),
        contract: z
          .string()
          .nullable()
          .describe('null for native transfers')
          .meta({ example: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2' }),
        token_id: z
          .string()
          .nullable()
          .describe('ERC-721 and ERC-1155: the token id')
          .meta({ example: null }),
        value: z
          .string()
          .regex(/^\d+$/)
          .describe('raw integer amount')
          .meta({ example: '1000000000000000000' }),
        formatted_value: z
          .string()
          .nullable()
          .describe('decimal-adjusted; null when decimals are unknown')
          .meta({ example: '1' }),
        symbol: z
          .string()
          .nullable()
          .describe("The token's symbol (the native symbol for native transfers)")
          .meta({ example: 'WETH' }),
        decimals: intOrNull.describe("The token's decimals").meta({ example: 18 }),
      }),
    )
    .describe('This page of transfers'),
  next_cursor: z
    .string()
    .nullable()
    .describe('null on the last page')
    .meta({ example: 'eyJiIjoxMjM0NTYsImkiOjB9' }),
  index: indexCoverage,
})

/** Halyard's transfer API: native and token transfers of an address, keyset-paged. */
export function registerTransferRoutes(
  app: FastifyInstance,
  transfers: TransferService,
  history: IndexHistory,
): void {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/transfers/:chain/:address',
    summary: 'Transfers of an address',
    description:
      'Native, ERC-20, ERC-721 and ERC-1155 transfers from or to `address`, from the index, newest first, with a cursor for the next page; filters by direction, category and block range. 20 CU.',
    scope: 'data:read',
    // Like the other list routes (token balances, owned NFTs): one indexed read per page.
    cost: 20,
    network: EVM_SLUG,
    what: 'transfers',
    schema: { params: z.object({ chain: chainSlug, address: address('address') }), query: transferQuery },
    responses: { 200: transferList },
    responseHeaders: INDEX_RESPONSE_HEADERS,
    handler: async ({ network, params, query, reply, caller }) => {
      // Native transfers are not found by a history scan (no logs): with them, the answer is
      // complete from the index's own start only.
      const native =
        query.contract === undefined &&
        (query.category === undefined || query.category.some((c) => c === 'external' || c === 'internal'))
      const coverage = await history.ofAddress(network, params.address, caller.accountId, { native })
      const index = stateCoverage(reply, fromBlock(coverage, query.from_block))
      const list = await transfers.list(network, params.address, {
        direction: query.direction,
        categories: query.category,
        fromBlock: query.from_block,
        toBlock: query.to_block,
        contract: query.contract,
        order: query.order,
        limit: query.limit,
        cursor: query.cursor,
      })
      return { ...list, index }
    },
  })
}
