import { readFileSync } from 'node:fs'
import YAML from 'yaml'
import { z } from 'zod'
import { gatewaySchema } from '../chains/gateway.ts'
import { ConfigError, describeZodError } from '../common/validation.ts'

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

/** A network's own keys; the features' keys (NetworkSections) are composed in beside them. */
const networkCoreShape = {
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
      /**
       * Where the index starts at first start: `genesis` (default), a block number, or `head`
       * (now, minus confirmations). Answers say from which block they are complete; addresses
       * asked about with older history get a targeted scan (README "Indexer history").
       */
      history: z.union([z.enum(['genesis', 'head']), z.number().int().min(0)]).optional(),
      /** Deprecated alias of `history: <block>`. */
      startBlock: z.number().int().min(0).optional(),
      /** Targeted history scans of addresses older than the index (README "Indexer history"). */
      historyScans: z
        .object({
          /** Scans run at once per network, on each instance. */
          concurrency: z.number().int().min(0).max(64).default(2),
          /** Scans waiting per network; beyond it a request is answered partial, not queued. */
          maxQueued: z.number().int().min(0).max(1_000_000).default(1000),
          /** Scans one API key may have waiting or running per network. */
          maxQueuedPerKey: z.number().int().min(0).max(1_000_000).default(20),
          /** First eth_getLogs window (blocks); halved when the node refuses it. */
          window: z.number().int().min(1).max(100_000_000).default(100_000),
        })
        .strict()
        .optional(),
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
      /**
       * The indexer's budget on this network's upstreams: requests started in any second, and
       * in flight at once (blocks, logs, receipts, traces). Set them under the provider's plan.
       */
      requestsPerSecond: z.number().int().min(1).max(100_000).default(200),
      maxConcurrency: z.number().int().min(1).max(1024).default(16),
      /**
       * Backfill ranges read at once (logs and blocks, within the budget above), committed in
       * block order; 1 reads one range ahead of the one committing.
       */
      backfillWorkers: z.number().int().min(1).max(64).default(4),
    })
    .strict()
    .refine((i) => i.history === undefined || i.startBlock === undefined, {
      message: 'set history or its deprecated alias startBlock, not both',
      path: ['startBlock'],
    })
    .optional(),
  /** JSON-RPC gateway: lag limits, hedging, breaker, cache, eth_getLogs limits (defaults apply). */
  gateway: gatewaySchema.optional(),
}

/**
 * The keys features add to a network's config, each with its schema's type. Empty here: a
 * feature adds its key by declaration merging beside its schema
 * (`declare module '../config/file.ts' { interface NetworkSections { bundler: … } }`), and the
 * composition root (src/server/config-schema.ts) passes the schemas themselves to
 * `configSchemas`, so the compiler refuses a composition that leaves a feature's key out.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in each feature's config schema
export interface NetworkSections {}

/** Every key of a network's config (a mapped type: zod wants an object type, not an interface). */
type NetworkShape = typeof networkCoreShape & { [K in keyof NetworkSections]: NetworkSections[K] }
type NetworkSchema = z.ZodObject<NetworkShape, z.core.$strict>

export type NetworkConfig = z.output<NetworkSchema>
export type NetworkConfigInput = z.input<NetworkSchema>

/**
 * The config file's schemas, with the features' keys of a network after its own, and the
 * functions that read a config through them. Errors name the field path (`networks[0].chainId`).
 */
export function configSchemas(sections: NetworkSections) {
  const shape: NetworkShape = { ...networkCoreShape, ...sections }
  const networkSchema: NetworkSchema = z
    .object(shape)
    .strict()
    .superRefine((n, ctx) => {
      if (n.kind === 'evm' && n.chainId === undefined) {
        ctx.addIssue({ code: 'custom', path: ['chainId'], message: 'is required for kind evm' })
      }
    })

  const configFileSchema = z
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

  function parseConfig(raw: unknown, source = 'config'): ConfigFile {
    const parsed = configFileSchema.safeParse(raw)
    if (!parsed.success) throw new ConfigError(`invalid ${source}: ${describeZodError(parsed.error)}`)
    return parsed.data
  }

  function loadConfigFile(file: string): ConfigFile {
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

  return { networkSchema, configFileSchema, parseConfig, loadConfigFile }
}

/** A parsed config file: its networks, and any other top-level keys as written. */
export interface ConfigFile {
  networks: NetworkConfig[]
  [key: string]: unknown
}
