import { z } from 'zod'

/**
 * Per-network settings of the data APIs (tokens, NFTs), under `data:` in a network's config.
 * Kept here, next to the code that reads them; src/server/config-schema.ts composes the schema in.
 */
const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string such as "1.25"')
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address')
const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'must be an http:// or https:// URL')
/** The key `native` names the chain's native currency; anything else is a token contract. */
const tokenKey = z.union([z.literal('native'), address])

export const priceSourceSchema = z.discriminatedUnion('source', [
  z
    .object({
      source: z.literal('static'),
      file: z
        .string()
        .min(1)
        .optional()
        .describe('JSON file `{ "native": "3000", "0x…": "1.00" }`; re-read when it changes.'),
      prices: z
        .record(tokenKey, decimalString)
        .optional()
        .describe('Prices in USD by token (`native` or a contract address), as decimal strings.'),
    })
    .strict(),
  z
    .object({
      source: z.literal('coingecko'),
      url: httpUrl.describe('API root, e.g. https://api.coingecko.com/api/v3 (or pro-api…).'),
      apiKey: z.string().min(1).optional().describe('CoinGecko API key, if the plan needs one.'),
      platform: z
        .string()
        .min(1)
        .describe('CoinGecko asset platform id of this network, e.g. `ethereum`, `polygon-pos`.'),
      nativeCoinId: z
        .string()
        .min(1)
        .optional()
        .describe('CoinGecko coin id of the native currency, e.g. `ethereum`.'),
    })
    .strict(),
  z
    .object({
      source: z.literal('chainlink'),
      feeds: z
        .record(tokenKey, address)
        .describe('Token (or `native`) → USD aggregator address whose latestRoundData is read.'),
      maxAgeSeconds: z
        .number()
        .int()
        .min(1)
        .default(86_400)
        .describe('A round older than this is stale: its price counts as unknown.'),
    })
    .strict(),
])

export const dataApiSchema = z
  .object({
    prices: priceSourceSchema
      .optional()
      .describe(
        'Where USD prices come from: `source: static` (a file or inline prices), `coingecko` or `chainlink`.',
      ),
    priceTtlSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(60)
      .describe('How long a price is reused before it is asked for again.'),
    tokenLists: z
      .array(z.string().min(1))
      .default([])
      .describe('Token lists in the Uniswap token-list format (file paths or http(s) URLs), for logos.'),
    ipfsGateway: httpUrl
      .default('https://ipfs.io/ipfs/')
      .describe('Gateways that `ipfs://` and `ar://` URIs are rewritten to (path appended).'),
    arweaveGateway: httpUrl
      .default('https://arweave.net/')
      .describe('Gateway that `ar://` URIs are rewritten to (path appended).'),
    nftMetadata: z
      .object({
        timeoutMs: z
          .number()
          .int()
          .min(100)
          .max(60_000)
          .default(10_000)
          .describe('Whole-fetch deadline, redirects included.'),
        maxBytes: z
          .number()
          .int()
          .min(1024)
          .max(16 * 1024 * 1024)
          .default(1024 * 1024)
          .describe("Largest document read; a larger one leaves the token's metadata null."),
        maxRedirects: z
          .number()
          .int()
          .min(0)
          .max(10)
          .default(3)
          .describe('Redirects followed when fetching a metadata document.'),
        refreshIntervalSeconds: z
          .number()
          .int()
          .min(0)
          .max(86_400)
          .default(60)
          .describe('`?refresh=true` is honoured at most once per this many seconds per token.'),
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(256)
          .default(8)
          .describe(
            'Background metadata fetches (owned-NFT lists fill in lazily) in flight at once per network.',
          ),
        ownedWaitMs: z
          .number()
          .int()
          .min(0)
          .max(30_000)
          .default(1500)
          .describe('How long an owned-NFT list waits for missing metadata before answering with nulls.'),
      })
      .strict()
      .prefault({})
      .describe('Fetching NFT metadata documents (src/nfts): always through the SSRF-safe fetch.'),
  })
  .strict()

export type PriceSourceConfig = z.infer<typeof priceSourceSchema>
export type DataApiConfig = z.infer<typeof dataApiSchema>

declare module '../config/file.ts' {
  interface NetworkSections {
    /** Token/NFT data APIs: price source, token lists, IPFS/Arweave gateways. */
    data: z.ZodOptional<typeof dataApiSchema>
  }
}

/** Defaults when a network has no `data:` section. */
export const DEFAULT_DATA_API: DataApiConfig = dataApiSchema.parse({})
