import { z } from 'zod'
import { configAddressSchema as address } from '../common/address-schema.ts'

/**
 * Per-network ERC-4337 contract addresses (config key `accountAbstraction`). Production names
 * them; dev mode fills them in from what it deployed (src/devnet/account-abstraction.ts). The
 * start-up check that they hold code is in contract-check.ts.
 *
 * ```yaml
 * accountAbstraction:
 *   entryPoints: { v06: 0x5FF1…2789, v07: 0x0000…a032 }
 *   simpleAccountFactory: { v06: 0x9406…6454, v07: 0x91E6…8985 }   # v07 backs /v1/wallets
 *   paymaster: 0x…                                                  # VerifyingPaymaster v0.7
 * ```
 */
/** One address per EntryPoint version, either optional. */
const perVersion = z
  .object({
    v06: address.optional().describe('For EntryPoint v0.6.'),
    v07: address.optional().describe('For EntryPoint v0.7.'),
  })
  .strict()
  .default({})

export const accountAbstractionSchema = z
  .object({
    entryPoints: perVersion.describe(
      'ERC-4337 EntryPoint address per version (`v06`, `v07`); dev mode fills them in from what it deployed.',
    ),
    simpleAccountFactory: perVersion.describe(
      'SimpleAccountFactory address per EntryPoint version; the v07 one backs `/v1/wallets`.',
    ),
    paymaster: address.optional().describe('The VerifyingPaymaster v0.7 that gas sponsorship signs for.'),
  })
  .strict()

export type AccountAbstractionConfig = z.infer<typeof accountAbstractionSchema>

declare module '../config/file.ts' {
  interface NetworkSections {
    /** ERC-4337 EntryPoints, SimpleAccountFactory, paymaster; code checked at start-up (contract-check.ts). */
    accountAbstraction: z.ZodOptional<typeof accountAbstractionSchema>
  }
}
