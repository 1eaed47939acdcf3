import type { Kysely } from 'kysely'
import { getBalance, getCode, hasCode } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { formatUnits, multiplyDecimal } from '../common/decimal.ts'
import { notFound } from '../errors.ts'
import type { NetworkDataSources } from '../prices/registry.ts'
import type { TokenKey } from '../prices/sources.ts'
import type { Database } from '../storage/schema.ts'
import { type Address, type Page, slicePage } from '../types.ts'
import { call, decodeString, decodeUint, SELECTORS } from './erc20.ts'
import { MultiReader } from './multicall.ts'
import * as store from './store.ts'

/** The pseudo-contract of the native currency in balance lists (Moralis/1inch convention). */
export const NATIVE_CONTRACT: Address = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'

/** Wire shapes. Unknown values are `null`, never invented. */
export interface TokenBalance {
  contract: Address
  symbol: string | null
  name: string | null
  decimals: number
  balance: string
  formatted_balance: string
  usd_value: string | null
  logo_url: string | null
}

export interface TokenBalanceList {
  address: Address
  chain: string
  tokens: TokenBalance[]
  page: number
  total: number
}

export interface TokenMetadata {
  contract: Address
  chain: string
  name: string | null
  symbol: string | null
  decimals: number | null
  total_supply: string | null
  formatted_total_supply: string | null
  price_usd: string | null
  market_cap_usd: string | null
  logo_url: string | null
}

export interface TokenServiceDeps {
  db: Kysely<Database>
  /** Per network slug. */
  sources: (net: Network) => NetworkDataSources
  /** The indexer's last committed block of a network: cached balances are dropped when it moves. */
  indexCursor?: (slug: string) => Promise<{ hash: string } | null>
}

/** What an address holds, before prices and pagination: reused within one block. */
interface Holding {
  contract: Address
  balance: bigint
  meta: { name: string | null; symbol: string | null; decimals: number | null } | undefined
}

/** Addresses whose holdings are kept (most recently computed win). */
const HOLDINGS_CACHE_SIZE = 10_000

/** Display names of native currencies by symbol (the symbol itself when not listed). */
export const NATIVE_NAMES: Readonly<Record<string, string>> = {
  ETH: 'Ether',
  POL: 'Polygon Ecosystem Token',
  MATIC: 'Matic',
}

/**
 * Token balances and metadata from Halyard's own index: which tokens an address touched comes
 * from the indexer's `token_holders`; balances are read at the head through Multicall3, so
 * rebasing and fee-on-transfer tokens show what `balanceOf` says.
 */
export class TokenService {
  private readonly readers = new Map<string, MultiReader>()
  private readonly metaCache = new Map<string, store.TokenMeta>()
  private readonly holdingsCache = new Map<string, { stamp: string; at: number; value: Promise<Holding[]> }>()

  constructor(private readonly deps: TokenServiceDeps) {}

  reader(net: Network): MultiReader {
    let r = this.readers.get(net.slug)
    if (!r) {
      r = new MultiReader(net)
      this.readers.set(net.slug, r)
    }
    return r
  }

  /**
   * `coverage` names how far the index knows the holder's history (its history scan's state):
   * a list read while a scan was running is not reused once it has finished.
   */
  async balances(net: Network, holder: Address, page: Page, coverage = ''): Promise<TokenBalanceList> {
    const all = await this.holdings(net, holder, coverage)
    const shown = slicePage(all, page)
    const src = this.deps.sources(net)
    const prices = await src.prices.prices(
      shown.map((s) => (s.contract === NATIVE_CONTRACT ? 'native' : s.contract) as TokenKey),
    )
    const tokens = shown.map((s): TokenBalance => {
      const decimals = s.meta?.decimals ?? 0
      const price = prices.get(s.contract === NATIVE_CONTRACT ? 'native' : s.contract)
      return {
        contract: s.contract,
        symbol: s.meta?.symbol ?? null,
        name: s.meta?.name ?? null,
        decimals,
        balance: s.balance.toString(),
        formatted_balance: formatUnits(s.balance, decimals),
        usd_value: price === undefined ? null : multiplyDecimal(s.balance, decimals, price),
        logo_url:
          net.chainId === undefined ? null : (src.tokenLists.get(net.chainId, s.contract)?.logoURI ?? null),
      }
    })
    return { address: holder, chain: net.slug, tokens, page: page.page, total: all.length }
  }

  /**
   * The native balance and every touched ERC-20 with a non-zero balance. Reading 200 balances
   * is one Multicall3 call but still the bulk of a request, so the result is reused while the
   * chain head (as the upstream pool tracks it) and the index cursor stay where they were, and
   * for at most one block time: a wallet polling an address pays for one read per block.
   */
  private async holdings(net: Network, holder: Address, coverage: string): Promise<Holding[]> {
    const key = `${net.slug}:${holder}:${coverage}`
    const stamp = await this.blockStamp(net)
    const maxAge = Math.min(5000, net.config.blockTimeMs)
    const hit = stamp === null ? undefined : this.holdingsCache.get(key)
    if (hit && hit.stamp === stamp && Date.now() - hit.at < maxAge) return hit.value
    // The promise is what is kept: concurrent requests for one address share a single read.
    const value = this.readHoldings(net, holder)
    if (stamp !== null) {
      const entry = { stamp, at: Date.now(), value }
      this.holdingsCache.delete(key)
      this.holdingsCache.set(key, entry)
      value.catch(() => {
        if (this.holdingsCache.get(key) === entry) this.holdingsCache.delete(key)
      })
      if (this.holdingsCache.size > HOLDINGS_CACHE_SIZE) {
        const oldest = this.holdingsCache.keys().next().value
        if (oldest !== undefined) this.holdingsCache.delete(oldest)
      }
    }
    return value
  }

  /** Identifies "the same block" for the cache; null (no caching) when the head is unknown. */
  private async blockStamp(net: Network): Promise<string | null> {
    const head = net.pool.bestHead?.()
    if (head === undefined || !this.deps.indexCursor) return null
    const cursor = await this.deps.indexCursor(net.slug)
    return `${head}:${cursor?.hash ?? '-'}`
  }

  private async readHoldings(net: Network, holder: Address): Promise<Holding[]> {
    // The native balance needs no index: its round trip overlaps the index query.
    const nativeRead = this.nativeBalance(net, holder)
    nativeRead.catch(() => {}) // awaited below; a failure must not go unhandled meanwhile
    const contracts = await store.touchedContracts(this.deps.db, net.slug, holder)
    const [native, raw, metas] = await Promise.all([
      nativeRead,
      this.reader(net).read(contracts.map((c) => call(c, SELECTORS.balanceOf, holder))),
      this.metas(net, contracts),
    ])
    const held: { contract: Address; balance: bigint }[] = []
    contracts.forEach((c, i) => {
      const b = decodeUint(raw[i])
      if (b !== null && b > 0n) held.push({ contract: c, balance: b })
    })
    const sym = net.config.nativeCurrency.symbol
    return [
      {
        contract: NATIVE_CONTRACT,
        balance: native,
        meta: { name: NATIVE_NAMES[sym] ?? sym, symbol: sym, decimals: net.config.nativeCurrency.decimals },
      },
      ...held.map((h) => ({ ...h, meta: metas.get(h.contract) })),
    ]
  }

  async metadata(net: Network, contract: Address): Promise<TokenMetadata> {
    if (!hasCode(await getCode(net, contract))) throw notFound(`${contract} is not a contract on ${net.slug}`)
    const [metas, supplyRes] = await Promise.all([
      this.metas(net, [contract]),
      this.reader(net).read([call(contract, SELECTORS.totalSupply)]),
    ])
    const meta = metas.get(contract)
    const supply = decodeUint(supplyRes[0])
    if (!meta?.name && !meta?.symbol && meta?.decimals == null && supply === null) {
      throw notFound(
        `${contract} on ${net.slug} is not a token contract (no name, symbol, decimals or totalSupply)`,
      )
    }
    const src = this.deps.sources(net)
    const price = (await src.prices.prices([contract])).get(contract) ?? null
    const decimals = meta?.decimals ?? null
    const formattedSupply = supply === null ? null : formatUnits(supply, decimals ?? 0)
    return {
      contract,
      chain: net.slug,
      name: meta?.name ?? null,
      symbol: meta?.symbol ?? null,
      decimals,
      total_supply: supply === null ? null : supply.toString(),
      formatted_total_supply: formattedSupply,
      price_usd: price,
      market_cap_usd:
        price === null || supply === null ? null : multiplyDecimal(supply, decimals ?? 0, price),
      logo_url:
        net.chainId === undefined ? null : (src.tokenLists.get(net.chainId, contract)?.logoURI ?? null),
    }
  }

  /** Name, symbol and decimals never change: memory, then the database, then the chain. */
  async metas(net: Network, contracts: readonly Address[]): Promise<Map<Address, store.TokenMeta>> {
    const out = new Map<Address, store.TokenMeta>()
    let missing: Address[] = []
    for (const c of contracts) {
      const hit = this.metaCache.get(`${net.slug}:${c}`)
      if (hit) out.set(c, hit)
      else missing.push(c)
    }
    if (missing.length === 0) return out
    for (const m of await store.readMetas(this.deps.db, net.slug, missing)) this.remember(net, m, out)
    missing = missing.filter((c) => !out.has(c))
    if (missing.length === 0) return out
    const calls = missing.flatMap((c) => [
      call(c, SELECTORS.name),
      call(c, SELECTORS.symbol),
      call(c, SELECTORS.decimals),
    ])
    const res = await this.reader(net).read(calls)
    const fresh = missing.map((contract, i): store.TokenMeta => {
      const d = decodeUint(res[i * 3 + 2])
      return {
        contract,
        name: decodeString(res[i * 3]),
        symbol: decodeString(res[i * 3 + 1]),
        decimals: d !== null && d <= 255n ? Number(d) : null,
      }
    })
    await store.saveMetas(this.deps.db, net.slug, fresh)
    for (const m of fresh) this.remember(net, m, out)
    return out
  }

  private remember(net: Network, m: store.TokenMeta, out: Map<Address, store.TokenMeta>) {
    this.metaCache.set(`${net.slug}:${m.contract}`, m)
    out.set(m.contract, m)
  }

  private async nativeBalance(net: Network, holder: Address): Promise<bigint> {
    return getBalance(net, holder)
  }
}
