import { readFileSync } from 'node:fs'
import YAML from 'yaml'
import { z } from 'zod'
import { accountAbstractionSchema } from '../aa/config.ts'
import { bundlerConfigSchema } from '../bundler/config.ts'
import { gasConfigSchema } from '../gas/price-config.ts'
import { sponsorshipConfigSchema } from '../gas/sponsor-config.ts'
import { dataApiSchema } from '../prices/config.ts'
import { ConfigError, describeZodError } from '../shared/validation.ts'

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

/** JSON-RPC gateway tuning per network (src/chains upstream pool, src/rpc cache and guards). */
export const gatewaySchema = z
  .object({
    /** An upstream this many blocks (slots) behind the best one is left out until it catches up. */
    maxLagBlocks: z.number().int().min(1).max(100_000).default(16),
    /** …or this far behind in time (lag × block time); eRPC uses 30 s. */
    maxLagMs: z.number().int().min(100).max(3_600_000).default(30_000),
    /** Background health check period; default: half the block time, within 250 ms – 5 s. */
    healthCheckMs: z.number().int().min(50).max(60_000).optional(),
    /** Send a read slower than the method's recent p95 to a second upstream as well. */
    hedge: z.boolean().default(false),
    /** Never hedge sooner than this. */
    hedgeMinDelayMs: z.number().int().min(1).max(60_000).default(20),
    /** Consecutive failures that open an upstream's circuit breaker. */
    breakerFailures: z.number().int().min(1).max(1_000).default(3),
    /** How long an open breaker keeps an upstream out before a probe may close it. */
    breakerCooldownMs: z.number().int().min(50).max(600_000).default(2_000),
    /** Send raw transactions to every healthy upstream at once. */
    broadcastTransactions: z.boolean().default(true),
    /** Cache finalized, immutable results (memory, and Redis when REDIS_URL is set). */
    cache: z.boolean().default(true),
    /** eth_getLogs: largest block range and result count a request may ask for. */
    getLogsMaxRange: z.number().int().min(1).max(10_000_000).default(10_000),
    getLogsMaxResults: z.number().int().min(1).max(10_000_000).default(10_000),
    /** Solana: the cluster's genesis hash; an upstream reporting another one is never used. */
    genesisHash: z.string().min(32).max(64).optional(),
  })
  .strict()

export type GatewaySettings = z.infer<typeof gatewaySchema>

const parsedGateway = new WeakMap<object, GatewaySettings>()

/**
 * A network's gateway settings with their defaults, parsed once per config object: the
 * upstream pool and the RPC service (getLogs guard) both read them.
 */
export function gatewaySettings(cfg: { gateway?: unknown }): GatewaySettings {
  let settings = parsedGateway.get(cfg)
  if (!settings) {
    settings = gatewaySchema.parse(cfg.gateway ?? {})
    parsedGateway.set(cfg, settings)
  }
  return settings
}

export const networkSchema = z
  .object({
    chain: slugPart,
    network: slugPart,
    kind: z.enum(['evm', 'solana']).default('evm'),
    chainId: z.number().int().positive().optional(),
    /**
     * More names this network answers to under the Alchemy-compatible root (`/alchemy/{name}/v2/…`),
     * beside its slug and Alchemy's own name for it (`eth-mainnet` for ethereum/mainnet).
     */
    alchemyNames: z.array(slugPart).max(16).optional(),
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
    /**
     * Devnet methods (anvil_*, hardhat_*, evm_*) on a devnet: writes need rpc:write; those that
     * wipe or replace the devnet (anvil_reset, anvil_loadState, anvil_rollback, anvil_reorg, …,
     * src/rpc/methods/evm.ts) are refused unless `destructive` is true.
     */
    devMethods: z
      .object({ destructive: z.boolean().default(false) })
      .strict()
      .optional(),
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
        /**
         * `GET /ready` fails for this network while the indexer is more blocks than this behind
         * head minus confirmations; default about two minutes of blocks (at least 10).
         */
        maxLagBlocks: z.number().int().min(1).max(100_000_000).optional(),
        /**
         * Internal (trace-level) native transfers: `auto` traces every block with transactions
         * with whichever method the node offers (trace_block, or debug_traceBlockByNumber with
         * the call tracer); `off` spares the upstream that cost (the `internal` category is refused).
         */
        internalTransfers: z.enum(['auto', 'off']).default('auto'),
      })
      .strict()
      .optional(),
    /** JSON-RPC gateway: lag limits, hedging, breaker, cache, eth_getLogs limits (defaults apply). */
    gateway: gatewaySchema.optional(),
    /** Token/NFT data APIs: price source, token lists, IPFS/Arweave gateways (src/prices/config.ts). */
    data: dataApiSchema.optional(),
    /** ERC-4337 EntryPoints, SimpleAccountFactory, paymaster; code checked at start-up (src/aa/config.ts). */
    accountAbstraction: accountAbstractionSchema.optional(),
    /** Gas price estimates: per-network minimum tip (src/gas/price-config.ts). */
    gas: gasConfigSchema.optional(),
    /** Gas sponsorship: the v0.6 VerifyingPaymaster and the deposit floor (src/gas/sponsor-config.ts). */
    sponsorship: sponsorshipConfigSchema.optional(),
    /** ERC-4337 bundler: mode, executor keys, debug methods (src/bundler/config.ts). */
    bundler: bundlerConfigSchema.optional(),
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
