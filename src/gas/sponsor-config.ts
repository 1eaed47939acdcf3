import { z } from 'zod'
import { configAddressSchema } from '../common/address-schema.ts'
import { parseDecimal } from '../common/decimal.ts'
import { ceilingsConfigSchema } from './sponsor-ceilings.ts'

/**
 * Where sponsorship gets its paymasters, signer key and deposit floor. The v0.7 paymaster is the
 * network's `accountAbstraction.paymaster`; the rest is a network's optional `sponsorship` key:
 *
 * ```yaml
 * sponsorship:
 *   paymasterV06: 0x…              # VerifyingPaymaster v0.6 (same signer), for v0.6 ops
 *   depositFloor: "0.5"            # native units; /ready and metrics report a deposit below it
 *   ceilings:                      # the operator's ceilings per plan (sponsor-ceilings.ts)
 *     free: { perOperation: "0.01", perDay: "0.1", reservedAtOnce: "0.05" }
 *     enterprise: { perDay: "50" }  # null = unlimited; keys not given keep the defaults
 * ```
 * The signer key is not part of the config file (paymaster-key.ts); what a network's config
 * makes of it, the sponsored networks, is in sponsor-networks.ts.
 */

export const sponsorshipConfigSchema = z
  .object({
    paymasterV06: configAddressSchema
      .optional()
      .describe('VerifyingPaymaster v0.6 (same signer as the v0.7 one) for v0.6 UserOperations.'),
    depositFloor: z
      .string()
      .refine((v) => parseDecimal(v) !== null, 'must be a decimal string in native units, such as "0.5"')
      .default('0.1')
      .describe(
        'Native units (decimal string); `/ready` and the paymaster deposit metric report a paymaster deposit below it.',
      ),
    ceilings: ceilingsConfigSchema
      .optional()
      .describe(
        "The operator's sponsorship ceilings per plan (`free`, `growth`, `enterprise`); plans and keys not given keep the defaults.",
      ),
  })
  .strict()

export type SponsorshipConfig = z.infer<typeof sponsorshipConfigSchema>

declare module '../config/file.ts' {
  interface NetworkSections {
    /** Gas sponsorship: the v0.6 VerifyingPaymaster, the deposit floor and the plans' ceilings. */
    sponsorship: z.ZodOptional<typeof sponsorshipConfigSchema>
  }
}

/** Wei from a decimal in native units (18 decimals). */
export function nativeToWei(v: string): bigint {
  const d = parseDecimal(v)
  if (!d || d.scale > 18) throw new Error(`${v} is not a decimal with at most 18 decimals`)
  return d.mantissa * 10n ** BigInt(18 - d.scale)
}
