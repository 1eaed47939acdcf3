import type { Kysely } from 'kysely'
import { z } from 'zod'
import type { Network } from '../../chains/registry.ts'
import { answerJsonRpc } from '../../http/jsonrpc-errors.ts'
import { RPC_INVALID_PARAMS, RpcError } from '../../jsonrpc.ts'
import type { Logger } from '../../logger.ts'
import type { NetworkDataSources } from '../../prices/registry.ts'
import { paramsTuple, parseParams } from '../../rpc/methods/params.ts'
import { m } from '../../rpc/methods/row.ts'
import { type MethodSpec, variableCost } from '../../rpc/methods/spec.ts'
import type { Database } from '../../storage/schema.ts'
import { call, decodeUint, SELECTORS } from '../../tokens/erc20.ts'
import type { TokenService } from '../../tokens/service.ts'
import { touchedContractsPage } from '../../tokens/store.ts'
import { type Address, type Hex, isAddress, toLowerAddress } from '../../types.ts'

/**
 * `alchemy_getTokenBalances` and `alchemy_getTokenMetadata`, answered from Halyard's token
 * index (src/tokens): which tokens an address holds is the indexer's `token_holders`; balances
 * are `balanceOf` at the head through Multicall3, metadata the token feature's cached reads.
 */

/** Alchemy's limit on the contract-list form; one more is -32602 naming it. */
export const MAX_CONTRACTS = 1500
/** Alchemy's page size (and largest `maxCount`) for the "erc20" form. */
export const MAX_PAGE = 100
/** "DEFAULT_TOKENS" reads at most this many of the network's listed tokens (Alchemy's top 100). */
export const MAX_DEFAULT_TOKENS = 100

const addressField = z.string().refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')

const tokenSpec = z.unknown().transform((v, ctx): 'erc20' | 'DEFAULT_TOKENS' | Address[] => {
  if (v === undefined || v === null || v === 'erc20') return 'erc20'
  if (v === 'DEFAULT_TOKENS') return 'DEFAULT_TOKENS'
  if (Array.isArray(v)) {
    if (v.length === 0) ctx.addIssue({ code: 'custom', message: 'the contract list is empty' })
    else if (v.length > MAX_CONTRACTS)
      ctx.addIssue({
        code: 'custom',
        message: `at most ${MAX_CONTRACTS} contract addresses per call (got ${v.length})`,
      })
    else {
      const bad = v.findIndex((c) => !isAddress(c))
      if (bad < 0) return v.map((c) => toLowerAddress(c as string))
      ctx.addIssue({ code: 'custom', path: [bad], message: 'must be a 0x-prefixed 20-byte hex address' })
    }
    return z.NEVER
  }
  ctx.addIssue({
    code: 'custom',
    message: 'must be "erc20", "DEFAULT_TOKENS" or an array of contract addresses',
  })
  return z.NEVER
})

const maxCount = z
  .union([z.number(), z.string().regex(/^0x[0-9a-fA-F]{1,8}$/, `must be a number from 1 to ${MAX_PAGE}`)])
  .transform((v) => (typeof v === 'string' ? Number.parseInt(v, 16) : v))
  .pipe(z.number().int().min(1).max(MAX_PAGE))

const balanceOptions = z
  .object({
    pageKey: z.string().min(1).max(200).optional(),
    maxCount: maxCount.optional(),
  })
  .nullish()

const balancesParams = paramsTuple(
  [addressField, tokenSpec.optional(), balanceOptions.optional()],
  '[address, "erc20" | [contract, …] | "DEFAULT_TOKENS", {pageKey, maxCount}?]',
)
const metadataParams = paramsTuple([addressField], '[contractAddress]')

interface TokenBalanceEntry {
  contractAddress: Address
  tokenBalance: Hex | null
  error: string | null
}

/** Alchemy's balance encoding: a 32-byte hex quantity (ethers' BigNumber.from reads it). */
const balanceHex = (v: bigint): Hex => `0x${v.toString(16).padStart(64, '0')}`

export interface TokenMethodDeps {
  tokens: TokenService
  sources: (net: Network) => NetworkDataSources
  db: Kysely<Database>
  logger: Logger
}

export function balancesCost(params: readonly unknown[]): number {
  const list = params[1]
  if (!Array.isArray(list)) return 20
  return 20 + 10 * Math.max(0, Math.ceil((Math.min(list.length, MAX_CONTRACTS) - 200) / 100))
}

const badPageKey = () =>
  new RpcError(
    RPC_INVALID_PARAMS,
    'invalid params: params[2].pageKey: not a pageKey this method returned for this address',
  )

export function tokenRows(deps: TokenMethodDeps): MethodSpec[] {
  const { tokens, logger } = deps

  /** One Multicall3 read per ≤400 contracts; a contract whose balanceOf fails says so. */
  const read = async (net: Network, holder: Address, contracts: readonly Address[]) => {
    const raw = await tokens.reader(net).read(contracts.map((c) => call(c, SELECTORS.balanceOf, holder)))
    return contracts.map((c, i): TokenBalanceEntry => {
      const b = decodeUint(raw[i])
      return b === null
        ? { contractAddress: c, tokenBalance: null, error: 'balanceOf(address) did not return a uint256' }
        : { contractAddress: c, tokenBalance: balanceHex(b), error: null }
    })
  }

  const balances = async (net: Network, params: readonly unknown[]) => {
    const [rawHolder, spec, opts] = parseParams(balancesParams, params)
    const holder = toLowerAddress(rawHolder)
    if (Array.isArray(spec)) return { address: holder, tokenBalances: await read(net, holder, spec) }
    if (spec === 'DEFAULT_TOKENS') {
      const listed = net.chainId === undefined ? [] : deps.sources(net).tokenLists.addresses(net.chainId)
      return { address: holder, tokenBalances: await read(net, holder, listed.slice(0, MAX_DEFAULT_TOKENS)) }
    }
    // "erc20": every token the index saw the holder send or receive, in first-seen order; the
    // page key is the last contract of the page (keyset: a token first seen later is appended).
    let after: Address | undefined
    if (opts?.pageKey !== undefined) {
      if (!isAddress(opts.pageKey)) throw badPageKey()
      after = toLowerAddress(opts.pageKey)
    }
    const page = await touchedContractsPage(deps.db, net.slug, holder, after, opts?.maxCount ?? MAX_PAGE)
    if (page === 'unknown') throw badPageKey()
    const out: { address: Address; tokenBalances: TokenBalanceEntry[]; pageKey?: string } = {
      address: holder,
      tokenBalances: await read(net, holder, page.contracts),
    }
    const last = page.contracts.at(-1)
    if (page.more && last !== undefined) out.pageKey = last
    return out
  }

  const metadata = async (net: Network, params: readonly unknown[]) => {
    const [raw] = parseParams(metadataParams, params)
    const contract = toLowerAddress(raw)
    const meta = (await tokens.metas(net, [contract])).get(contract)
    const listed =
      net.chainId === undefined ? undefined : deps.sources(net).tokenLists.get(net.chainId, contract)
    return {
      name: meta?.name ?? null,
      symbol: meta?.symbol ?? null,
      decimals: meta?.decimals ?? null,
      logo: listed?.logoURI ?? null,
    }
  }

  return [
    // As /v1/tokens/{chain}/balances (20 CU, ≤ 200 tokens read in one Multicall3 call); a longer
    // contract list pays 10 CU per further 100 balanceOf.
    m(
      'alchemy_getTokenBalances',
      variableCost(
        '20 CU, plus 10 per further 100 contracts past the first 200 of a contract list',
        balancesCost,
      ),
      {
        scope: 'data:read',
        params: balancesParams,
        run: (x, p) =>
          answerJsonRpc({ logger: logger, what: 'alchemy_getTokenBalances' }, () => balances(x.network, p)),
      },
    ),
    // As /v1/tokens/{chain}/metadata (5 CU); mostly served from memory after the first read.
    m('alchemy_getTokenMetadata', 5, {
      scope: 'data:read',
      params: metadataParams,
      run: (x, p) =>
        answerJsonRpc({ logger: logger, what: 'alchemy_getTokenMetadata' }, () => metadata(x.network, p)),
    }),
  ]
}
