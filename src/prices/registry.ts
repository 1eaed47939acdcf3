import path from 'node:path'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import { type DataApiConfig, DEFAULT_DATA_API } from './config.ts'
import {
  CachedPriceSource,
  ChainlinkPriceSource,
  CoinGeckoPriceSource,
  NoPrices,
  type PriceSource,
  StaticPriceSource,
} from './sources.ts'
import { loadTokenLists, type TokenListIndex } from './token-lists.ts'

/** What the data APIs of one network read prices, logos and gateways from. */
export interface NetworkDataSources {
  readonly config: DataApiConfig
  readonly prices: PriceSource
  readonly tokenLists: TokenListIndex
}

export interface DataSourceOptions {
  devMode: boolean
  dataDir: string
  logger: Logger
}

/**
 * Builds each network's sources from its `data:` config. Dev mode without a configured source
 * uses a static file in the data dir (`prices.json`, `tokenlist.json`; `halyard dev --demo`
 * writes both) over DEV_PRICES; production without one has no prices (`null`) and no logos.
 */
export async function buildDataSources(net: Network, opts: DataSourceOptions): Promise<NetworkDataSources> {
  const config = net.config.data ?? DEFAULT_DATA_API
  const p =
    config.prices ??
    (opts.devMode
      ? { source: 'static' as const, prices: DEV_PRICES, file: devPricesFile(opts.dataDir) }
      : undefined)
  let inner: PriceSource
  switch (p?.source) {
    case 'static':
      inner = new StaticPriceSource(p.prices, p.file)
      break
    case 'coingecko':
      inner = new CoinGeckoPriceSource(p)
      break
    case 'chainlink':
      inner = new ChainlinkPriceSource(net, p)
      break
    default:
      inner = new NoPrices()
  }
  const log = opts.logger.child({ network: net.slug })
  const prices = new CachedPriceSource(inner, config.priceTtlSeconds * 1000, (err) =>
    log.warn({ err: err.message, source: inner.name }, 'price source failed; prices unknown for now'),
  )
  const lists =
    config.tokenLists.length > 0 ? config.tokenLists : opts.devMode ? [devTokenListFile(opts.dataDir)] : []
  const tokenLists = await loadTokenLists(lists, (src, err) => {
    // The dev default list is optional; a configured list that fails is worth a warning.
    if (config.tokenLists.length > 0) log.warn({ src, err: err.message }, 'token list not loaded')
  })
  return { config, prices, tokenLists }
}

/**
 * Dev mode's prices when `prices.json` does not name them (`halyard dev` without `--demo` writes
 * no file): native gas at 3000 USD, so USD policy rules such as `max_gas_usd` work on the devnet.
 */
export const DEV_PRICES: Readonly<Record<string, string>> = { native: '3000' }

export const devPricesFile = (dataDir: string) => path.join(dataDir, 'prices.json')
export const devTokenListFile = (dataDir: string) => path.join(dataDir, 'tokenlist.json')
