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
    url: httpUrl.describe('JSON-RPC endpoint of a node or provider (http:// or https://).'),
    ws: wsUrl.optional().describe('Its WebSocket endpoint; subscriptions (eth_subscribe) use it when given.'),
    weight: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(1)
      .describe('Share of reads this upstream gets relative to the others.'),
    archive: z
      .boolean()
      .default(false)
      .describe('The node keeps historical state: reads of old blocks are sent to it.'),
  })
  .strict()

/** A network's own keys; the features' keys (NetworkSections) are composed in beside them. */
const networkCoreShape = {
  chain: slugPart.describe(
    "Lowercase slug of the chain, the first part of the network's path (`/v1/rpc/{chain}/{network}`).",
  ),
  network: slugPart.describe(
    'Lowercase slug of the network (`mainnet`, `sepolia`, `devnet`); a network named mainnet refuses test keys.',
  ),
  kind: z.enum(['evm', 'solana']).default('evm').describe('The chain family.'),
  chainId: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('EIP-155 chain id, required for `evm`; an upstream reporting another id is never used.'),
  alchemyNames: z
    .array(slugPart)
    .max(16)
    .optional()
    .describe(
      "More names this network answers to under the Alchemy-compatible root (`/alchemy/{name}/v2/…`), beside its slug and Alchemy's own name for it (`eth-mainnet` for ethereum/mainnet).",
    ),
  confirmations: z
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(2)
    .describe('Blocks on top of a block before the indexer and webhooks treat it as settled.'),
  finalityDepth: z
    .number()
    .int()
    .min(0)
    .max(10_000)
    .optional()
    .describe('Blocks below head after which results can no longer change (cache, finality).'),
  blockTimeMs: z
    .number()
    .int()
    .min(50)
    .max(600_000)
    .default(12_000)
    .describe('Expected block interval; health-check periods and lag limits derive from it.'),
  nativeCurrency: z
    .object({
      symbol: z.string().min(1).max(16).describe('Ticker of the native currency.'),
      decimals: z.number().int().min(0).max(36).describe('Decimals of the native currency.'),
    })
    .strict()
    .default({ symbol: 'ETH', decimals: 18 })
    .describe('Symbol and decimals of the native currency.'),
  debugMethods: z
    .boolean()
    .default(false)
    .describe('Debug/trace methods are refused unless the operator enables them per network.'),
  devMethods: z
    .object({
      destructive: z
        .boolean()
        .default(false)
        .describe(
          'Also allow the devnet methods that wipe or replace the chain (anvil_reset, anvil_loadState, anvil_rollback, anvil_reorg, …).',
        ),
    })
    .strict()
    .optional()
    .describe(
      'Devnet methods (anvil_*, hardhat_*, evm_*) on a devnet: writes need the rpc:write scope; those that wipe or replace the devnet are refused unless `destructive` is true.',
    ),
  requestTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(120_000)
    .default(10_000)
    .describe('Deadline of each upstream call.'),
  upstreams: z
    .array(upstreamSchema)
    .min(1, 'needs at least one upstream')
    .describe("The nodes or providers this network's calls go to (at least one)."),
  indexer: z
    .object({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'Index this network (tokens, NFTs, transfers, webhooks); `false` leaves the gateway alone.',
        ),
      history: z
        .union([z.enum(['genesis', 'head']), z.number().int().min(0)])
        .optional()
        .describe(
          'Where the index starts at first start: `genesis` (default), a block number, or `head` (now, minus confirmations). Answers say from which block they are complete; addresses asked about with older history get a targeted scan.',
        ),
      startBlock: z.number().int().min(0).optional().describe('Deprecated alias of `history: <block>`.'),
      historyScans: z
        .object({
          concurrency: z
            .number()
            .int()
            .min(0)
            .max(64)
            .default(2)
            .describe('Scans run at once per network, on each instance.'),
          maxQueued: z
            .number()
            .int()
            .min(0)
            .max(1_000_000)
            .default(1000)
            .describe('Scans waiting per network; beyond it a request is answered partial, not queued.'),
          maxQueuedPerKey: z
            .number()
            .int()
            .min(0)
            .max(1_000_000)
            .default(20)
            .describe('Scans one API key may have waiting or running per network.'),
          window: z
            .number()
            .int()
            .min(1)
            .max(100_000_000)
            .default(100_000)
            .describe(
              'First eth_getLogs window (blocks); when the node refuses one, the next is the range its error names, else half.',
            ),
          claimSeconds: z
            .number()
            .int()
            .min(1)
            .max(3600)
            .default(60)
            .describe(
              'An instance running a scan holds it this long past its last window; the others answer it as running and take it over only after that (instances sharing a database scan each address once).',
            ),
        })
        .strict()
        .optional()
        .describe('Targeted history scans of addresses older than the index.'),
      maxBlockRange: z
        .number()
        .int()
        .min(1)
        .max(100_000)
        .default(2000)
        .describe('Largest eth_getLogs block range during backfill (shrinks on errors, grows on success).'),
      maxLagBlocks: z
        .number()
        .int()
        .min(1)
        .max(100_000_000)
        .optional()
        .describe(
          '`GET /ready` fails for this network while the indexer is more blocks than this behind head minus confirmations; default about two minutes of blocks (at least 10).',
        ),
      internalTransfers: z
        .enum(['auto', 'off'])
        .default('auto')
        .describe(
          'Internal (trace-level) native transfers: `auto` traces every block with transactions with whichever method the node offers (trace_block, or debug_traceBlockByNumber with the call tracer); `off` spares the upstream that cost (the `internal` category is refused).',
        ),
      requestsPerSecond: z
        .number()
        .int()
        .min(1)
        .max(100_000)
        .default(200)
        .describe(
          "The indexer's budget on this network's upstreams: requests started in any second (set it under the provider's plan).",
        ),
      maxConcurrency: z
        .number()
        .int()
        .min(1)
        .max(1024)
        .default(16)
        .describe("The indexer's upstream requests in flight at once on this network."),
      backfillWorkers: z
        .number()
        .int()
        .min(1)
        .max(64)
        .default(4)
        .describe(
          'Backfill ranges read at once (logs and blocks, within the budget above), committed in block order; 1 reads one range ahead of the one committing.',
        ),
    })
    .strict()
    .refine((i) => i.history === undefined || i.startBlock === undefined, {
      message: 'set history or its deprecated alias startBlock, not both',
      path: ['startBlock'],
    })
    .optional()
    .describe(
      'Chain indexer (token/NFT index, transfers, webhook matching): on for every EVM network unless `enabled: false`.',
    ),
  /** JSON-RPC gateway: lag limits, hedging, breaker, cache, eth_getLogs limits (defaults apply). */
  gateway: gatewaySchema
    .optional()
    .describe(
      'JSON-RPC gateway: lag limits, hedging, circuit breaker, cache, eth_getLogs limits (defaults apply).',
    ),
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
      networks: z
        .array(networkSchema)
        .min(1, 'needs at least one network')
        .describe('The networks Halyard serves, each at `/v1/rpc/{chain}/{network}`.'),
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
