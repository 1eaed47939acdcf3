import { z } from 'zod'

/**
 * Per-network gas estimate settings (config key `gas`). The tip floor is per network on purpose:
 * a fixed 1–2 gwei floor is right for Ethereum mainnet and overcharges L2s by orders of
 * magnitude (MetaMask/core #756).
 *
 * ```yaml
 * gas:
 *   minPriorityFeeGwei: "0.01"
 * ```
 */
/** The tip floor of a network whose config says nothing: 1 Mwei, negligible on any chain. */
export const DEFAULT_MIN_PRIORITY_FEE_GWEI = '0.001'

export const gasConfigSchema = z
  .object({
    minPriorityFeeGwei: z
      .string()
      .regex(/^\d{1,12}(\.\d{1,9})?$/, 'must be a decimal gwei amount with at most 9 decimal places')
      .default(DEFAULT_MIN_PRIORITY_FEE_GWEI)
      .describe('Lowest `max_priority_fee_gwei` any estimate returns, as an exact decimal (≤ 9 places).'),
  })
  .strict()

export type GasConfig = z.infer<typeof gasConfigSchema>

declare module '../config/file.ts' {
  interface NetworkSections {
    /** Gas price estimates: per-network minimum tip. */
    gas: z.ZodOptional<typeof gasConfigSchema>
  }
}
