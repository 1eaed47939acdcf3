import { readFileSync } from 'node:fs'
import YAML from 'yaml'
import { z } from 'zod'
import { dataApiSchema } from '../prices/config.ts'
import { ConfigError, describeZodError } from './validation.ts'

const slugPart = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lowercase letters, digits and dashes')
const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'must be an http:// or https:// URL')
const wsUrl = z.string().regex(/^wss?:\/\/\S+$/, 'must be a ws:// or wss:// URL')

export const upstreamSchema = z
  .object({
    url: httpUrl,
    ws: wsUrl.optional(),
    weight: z.number().int().min(1).max(1000).default(1),
    archive: z.boolean().default(false),
  })
  .strict()

export const networkSchema = z
  .object({
    chain: slugPart,
    network: slugPart,
    kind: z.enum(['evm', 'solana']).default('evm'),
    chainId: z.number().int().positive().optional(),
    confirmations: z.number().int().min(0).max(10_000).default(2),
    /** Blocks below head after which results can no longer change (cache, finality). */
    finalityDepth: z.number().int().min(0).max(10_000).optional(),
    blockTimeMs: z.number().int().min(50).max(600_000).default(12_000),
    nativeCurrency: z
      .object({ symbol: z.string().min(1).max(16), decimals: z.number().int().min(0).max(36) })
      .strict()
      .default({ symbol: 'ETH', decimals: 18 }),
    /** Debug/trace methods are refused unless the operator enables them per network. */
    debugMethods: z.boolean().default(false),
    requestTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
    upstreams: z.array(upstreamSchema).min(1, 'needs at least one upstream'),
    /** Chain indexer (src/indexer): on for every EVM network unless `enabled: false`. */
    indexer: z
      .object({
        enabled: z.boolean().default(true),
        /** First block to index; default genesis on a devnet, the head at first start elsewhere. */
        startBlock: z.number().int().min(0).optional(),
        /** Largest eth_getLogs block range during backfill (shrinks on errors, grows on success). */
        maxBlockRange: z.number().int().min(1).max(100_000).default(2000),
      })
      .strict()
      .optional(),
    /** Token/NFT data APIs: price source, token lists, IPFS/Arweave gateways (src/prices/config.ts). */
    data: dataApiSchema.optional(),
  })
  .strict()
  .superRefine((n, ctx) => {
    if (n.kind === 'evm' && n.chainId === undefined) {
      ctx.addIssue({ code: 'custom', path: ['chainId'], message: 'is required for kind evm' })
    }
  })

export const configFileSchema = z
  .object({
    networks: z.array(networkSchema).min(1, 'needs at least one network'),
  })
  .passthrough()
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>()
    cfg.networks.forEach((n, i) => {
      const id = `${n.chain}/${n.network}`
      if (seen.has(id))
        ctx.addIssue({ code: 'custom', path: ['networks', i], message: `duplicate network ${id}` })
      seen.add(id)
    })
  })

export type NetworkConfig = z.infer<typeof networkSchema>
export type NetworkConfigInput = z.input<typeof networkSchema>
export type ConfigFile = z.infer<typeof configFileSchema>

export function parseConfig(raw: unknown, source = 'config'): ConfigFile {
  const parsed = configFileSchema.safeParse(raw)
  if (!parsed.success) throw new ConfigError(`invalid ${source}: ${describeZodError(parsed.error)}`)
  return parsed.data
}

export function loadConfigFile(file: string): ConfigFile {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`)
  }
  let raw: unknown
  try {
    raw = YAML.parse(text)
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid YAML: ${(err as Error).message}`)
  }
  return parseConfig(raw, `config file ${file}`)
}
