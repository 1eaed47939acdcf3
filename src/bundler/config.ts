import { z } from 'zod'
import { parseDecimal } from '../common/decimal.ts'

/**
 * A network's optional `bundler` key. Without it, production serves no bundler on the network;
 * dev mode runs one anyway (safe mode, anvil's account 8 as executor, debug methods on).
 *
 * ```yaml
 * bundler:
 *   mode: unsafe                 # safe (default) needs debug_traceCall on the node
 *   executorKeys: [0x…]          # never logged; the first one sends bundles
 *   minExecutorBalance: "0.05"   # native units; /ready fails below it
 *   debugMethods: false          # debug_bundler_* (ERC-4337 spec tests)
 *   deploySimulations: true      # EntryPointSimulations v0.7 deployed once (default: dev mode)
 *   minStake: "1"                # native units an entity must stake to count as staked (ERC-7562 MIN_STAKE_VALUE)
 *   minUnstakeDelay: 86400       # seconds (ERC-7562 MIN_UNSTAKE_DELAY); dev mode default 1
 * ```
 */
export const bundlerConfigSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'Serve the ERC-4337 bundler on this network (without a `bundler` key, production serves none; dev mode runs one anyway).',
      ),
    mode: z
      .enum(['safe', 'unsafe'])
      .default('safe')
      .describe(
        'ERC-7562 validation rules need `debug_traceCall`; a node without tracing must say `unsafe`.',
      ),
    executorKeys: z
      .array(z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must each be 0x followed by 64 hex digits'))
      .max(16)
      .optional()
      .describe(
        'Private keys of the accounts that send bundles (0x + 64 hex digits; never logged); the first one sends.',
      ),
    minExecutorBalance: z
      .string()
      .refine((v) => parseDecimal(v) !== null, 'must be a decimal string in native units, such as "0.05"')
      .optional()
      .describe('Native units (decimal string); `/ready` fails while the executor holds less.'),
    debugMethods: z
      .boolean()
      .optional()
      .describe('Serve debug_bundler_* (the ERC-4337 spec tests use them); default: dev mode only.'),
    maxConcurrentExecutions: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe(
        'Node calls that run the EVM in flight at once (default 4; dev mode 1: anvil is fastest so); the eth_calls queued behind them go to the node as one JSON-RPC batch.',
      ),
    deploySimulations: z
      .boolean()
      .optional()
      .describe(
        'Deploy EntryPointSimulations v0.7 once (deterministic address, ~4.7M gas from the first executor key) so simulations need no 21 kB code override; default: dev mode only. A copy already deployed there is used either way.',
      ),
    minStake: z
      .string()
      .refine((v) => parseDecimal(v) !== null, 'must be a decimal string in native units, such as "1"')
      .optional()
      .describe(
        'ERC-7562 MIN_STAKE_VALUE in native units: chain specific in the ERC, so the operator\'s to set; default "1" (an ETH-priced chain, as the reference bundler\'s), in dev mode too. An entity with less is unstaked for every stake-gated rule.',
      ),
    minUnstakeDelay: z
      .number()
      .int()
      .min(0)
      .max(31_536_000)
      .optional()
      .describe(
        "ERC-7562 MIN_UNSTAKE_DELAY in seconds: default 86400 (the canonical mempool's value) for `serve`, 1 for dev mode, where test suites stake for a few seconds (the reference bundler's test config uses 0, Alto's default is 1).",
      ),
  })
  .strict()

export type BundlerConfig = z.infer<typeof bundlerConfigSchema>

declare module '../config/file.ts' {
  interface NetworkSections {
    /** ERC-4337 bundler: mode, executor keys, debug methods. */
    bundler: z.ZodOptional<typeof bundlerConfigSchema>
  }
}
