import { readFileSync, statSync } from 'node:fs'
import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import { z } from 'zod'
import { type ChainNode, call } from '../chains/reads.ts'
import { formatUnits, numberToDecimal } from '../common/decimal.ts'
import { describeZodError } from '../common/validation.ts'
import { type Address, toLowerAddress } from '../types.ts'
import type { PriceSourceConfig } from './config.ts'

/** `native` for the chain's currency, else a lowercase token contract address. */
export type TokenKey = 'native' | Address

/** USD prices of one network's tokens. A token missing from the answer has no known price. */
export interface PriceSource {
  readonly name: string
  prices(tokens: readonly TokenKey[]): Promise<Map<TokenKey, string>>
}

/** No price source configured: every price is unknown (`null` on the wire, never "0"). */
export class NoPrices implements PriceSource {
  readonly name = 'none'
  async prices(): Promise<Map<TokenKey, string>> {
    return new Map()
  }
}

const staticFileSchema = z.record(
  z.string(),
  z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string such as "1.25"'),
)

/**
 * Prices from the config and/or a JSON file (the dev default). The file is re-read when its
 * modification time changes, so an operator can edit it without a restart.
 */
export class StaticPriceSource implements PriceSource {
  readonly name = 'static'
  private fileMtime = -1
  private filePrices = new Map<string, string>()

  constructor(
    private readonly inline: Record<string, string> = {},
    private readonly file?: string,
  ) {}

  async prices(tokens: readonly TokenKey[]): Promise<Map<TokenKey, string>> {
    this.reload()
    const out = new Map<TokenKey, string>()
    for (const t of tokens) {
      const p = this.filePrices.get(t) ?? lowerKeys(this.inline).get(t)
      if (p !== undefined) out.set(t, p)
    }
    return out
  }

  private reload(): void {
    if (!this.file) return
    let mtime: number
    try {
      mtime = statSync(this.file).mtimeMs
    } catch {
      this.filePrices = new Map()
      this.fileMtime = -1
      return
    }
    if (mtime === this.fileMtime) return
    const parsed = staticFileSchema.safeParse(JSON.parse(readFileSync(this.file, 'utf8')))
    if (!parsed.success)
      throw new Error(`price file ${this.file} is invalid: ${describeZodError(parsed.error)}`)
    this.filePrices = lowerKeys(parsed.data)
    this.fileMtime = mtime
  }
}

function lowerKeys(r: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(r).map(([k, v]) => [k.toLowerCase(), v]))
}

const cgResponse = z.record(z.string(), z.object({ usd: z.number().optional() }).passthrough())

/**
 * A CoinGecko-style HTTP API: `/simple/token_price/{platform}?contract_addresses=…&vs_currencies=usd`
 * for tokens and `/simple/price?ids={coin}&vs_currencies=usd` for the native currency.
 */
export class CoinGeckoPriceSource implements PriceSource {
  readonly name = 'coingecko'
  constructor(
    private readonly cfg: Extract<PriceSourceConfig, { source: 'coingecko' }>,
    private readonly timeoutMs = 5_000,
  ) {}

  async prices(tokens: readonly TokenKey[]): Promise<Map<TokenKey, string>> {
    const out = new Map<TokenKey, string>()
    const base = this.cfg.url.replace(/\/+$/, '')
    const contracts = tokens.filter((t): t is Address => t !== 'native')
    // Public CoinGecko caps the number of addresses per request; stay well below it.
    for (let i = 0; i < contracts.length; i += 50) {
      const part = contracts.slice(i, i + 50)
      const url = `${base}/simple/token_price/${encodeURIComponent(this.cfg.platform)}?contract_addresses=${part.join(',')}&vs_currencies=usd`
      const body = await this.get(url)
      for (const [k, v] of Object.entries(body)) {
        const p = v.usd === undefined ? null : numberToDecimal(v.usd)
        if (p !== null) out.set(toLowerAddress(k), p)
      }
    }
    if (tokens.includes('native') && this.cfg.nativeCoinId) {
      const id = this.cfg.nativeCoinId
      const body = await this.get(`${base}/simple/price?ids=${encodeURIComponent(id)}&vs_currencies=usd`)
      const usd = body[id]?.usd
      const p = usd === undefined ? null : numberToDecimal(usd)
      if (p !== null) out.set('native', p)
    }
    return out
  }

  private async get(url: string): Promise<z.infer<typeof cgResponse>> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (this.cfg.apiKey) {
      headers[this.cfg.url.includes('pro-api') ? 'x-cg-pro-api-key' : 'x-cg-demo-api-key'] = this.cfg.apiKey
    }
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(this.timeoutMs), redirect: 'error' })
    if (!res.ok) throw new Error(`price API answered HTTP ${res.status}`)
    const parsed = cgResponse.safeParse(await res.json())
    if (!parsed.success) throw new Error('price API answer is not in the CoinGecko format')
    return parsed.data
  }
}

const AGGREGATOR_ABI = parseAbi([
  'function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
  'function decimals() view returns (uint8)',
])

/**
 * Chainlink USD aggregators read on-chain (`latestRoundData`, `decimals`). A non-positive or
 * stale answer is an unknown price.
 */
export class ChainlinkPriceSource implements PriceSource {
  readonly name = 'chainlink'
  private readonly decimals = new Map<Address, number>()
  private readonly feeds: Map<string, Address>

  constructor(
    private readonly node: ChainNode,
    private readonly cfg: Extract<PriceSourceConfig, { source: 'chainlink' }>,
  ) {
    this.feeds = new Map(Object.entries(cfg.feeds).map(([k, v]) => [k.toLowerCase(), toLowerAddress(v)]))
  }

  async prices(tokens: readonly TokenKey[]): Promise<Map<TokenKey, string>> {
    const out = new Map<TokenKey, string>()
    await Promise.all(
      tokens.map(async (t) => {
        const feed = this.feeds.get(t)
        if (!feed) return
        const p = await this.read(feed).catch(() => null)
        if (p !== null) out.set(t, p)
      }),
    )
    return out
  }

  private async read(feed: Address): Promise<string | null> {
    let dec = this.decimals.get(feed)
    if (dec === undefined) {
      dec = Number(await this.call(feed, 'decimals'))
      this.decimals.set(feed, dec)
    }
    const round = (await this.call(feed, 'latestRoundData')) as readonly [
      bigint,
      bigint,
      bigint,
      bigint,
      bigint,
    ]
    const [, answer, , updatedAt] = round
    if (answer <= 0n) return null
    if (BigInt(Math.floor(Date.now() / 1000)) - updatedAt > BigInt(this.cfg.maxAgeSeconds)) return null
    return formatUnits(answer, dec)
  }

  private async call(to: Address, fn: 'decimals' | 'latestRoundData'): Promise<unknown> {
    const data = encodeFunctionData({ abi: AGGREGATOR_ABI, functionName: fn })
    return decodeFunctionResult({
      abi: AGGREGATOR_ABI,
      functionName: fn,
      data: await call(this.node, { to, data }),
    })
  }
}

/**
 * Caches another source's answers (known and unknown alike) for `ttlMs`. A failing source
 * yields unknown prices rather than failing the request: a price is an extra, not the answer.
 */
export class CachedPriceSource implements PriceSource {
  readonly name: string
  private readonly cache = new Map<TokenKey, { price: string | null; until: number }>()

  constructor(
    private readonly inner: PriceSource,
    private readonly ttlMs: number,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.name = inner.name
  }

  async prices(tokens: readonly TokenKey[]): Promise<Map<TokenKey, string>> {
    const now = Date.now()
    const out = new Map<TokenKey, string>()
    const missing: TokenKey[] = []
    for (const t of tokens) {
      const hit = this.cache.get(t)
      if (hit && hit.until > now) {
        if (hit.price !== null) out.set(t, hit.price)
      } else missing.push(t)
    }
    if (missing.length === 0) return out
    let fresh: Map<TokenKey, string>
    try {
      fresh = await this.inner.prices(missing)
    } catch (err) {
      this.onError(err as Error)
      return out
    }
    for (const t of missing) {
      const p = fresh.get(t) ?? null
      this.cache.set(t, { price: p, until: now + this.ttlMs })
      if (p !== null) out.set(t, p)
    }
    return out
  }
}
