import { z } from 'zod'

/**
 * JSON-RPC gateway tuning per network (config key `gateway`): the upstream pool here in chains/
 * reads it, and so do src/rpc's cache and guards. The network schema (src/config/file.ts) embeds it.
 */
export const gatewaySchema = z
  .object({
    maxLagBlocks: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(16)
      .describe('An upstream this many blocks (slots) behind the best one is left out until it catches up.'),
    maxLagMs: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe('…or this far behind in time (lag × block time); eRPC uses 30 s.'),
    healthCheckMs: z
      .number()
      .int()
      .min(50)
      .max(60_000)
      .optional()
      .describe('Background health check period; default: half the block time, within 250 ms – 5 s.'),
    hedge: z
      .boolean()
      .default(false)
      .describe("Send a read slower than the method's recent p95 to a second upstream as well."),
    hedgeMinDelayMs: z
      .number()
      .int()
      .min(1)
      .max(60_000)
      .default(20)
      .describe('Never hedge sooner than this.'),
    breakerFailures: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(3)
      .describe("Consecutive failures that open an upstream's circuit breaker."),
    breakerCooldownMs: z
      .number()
      .int()
      .min(50)
      .max(600_000)
      .default(2_000)
      .describe('How long an open breaker keeps an upstream out before a probe may close it.'),
    broadcastTransactions: z
      .boolean()
      .default(true)
      .describe('Send raw transactions to every healthy upstream at once.'),
    cache: z
      .boolean()
      .default(true)
      .describe('Cache finalized, immutable results (memory, and Redis when REDIS_URL is set).'),
    getLogsMaxRange: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .default(10_000)
      .describe('eth_getLogs: largest block range a request may ask for.'),
    getLogsMaxResults: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .default(10_000)
      .describe('eth_getLogs: most logs a result may hold.'),
    genesisHash: z
      .string()
      .min(32)
      .max(64)
      .optional()
      .describe("Solana: the cluster's genesis hash; an upstream reporting another one is never used."),
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
