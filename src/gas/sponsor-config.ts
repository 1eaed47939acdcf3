import { existsSync, readFileSync } from 'node:fs'
import type { LocalAccount } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { z } from 'zod'
import type { Network } from '../chains/registry.ts'
import { paymasterSignerKeyFile } from '../devnet/account-abstraction.ts'
import type { PriceSource } from '../prices/sources.ts'
import { parseDecimal } from '../shared/decimal.ts'
import { type Address, isAddress, toLowerAddress } from '../types.ts'
import { ceilingsConfigSchema, planCeilings } from './sponsor-ceilings.ts'
import type { SponsorNetworkSpec, SponsorPaymaster } from './sponsor-service.ts'
import type { SettlementNetwork } from './sponsor-settlement.ts'

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
 * The signer key comes from the file named by HALYARD_PAYMASTER_KEY_FILE, or the variable
 * HALYARD_PAYMASTER_KEY (0x + 64 hex digits); dev mode reads the key it generated in the data
 * dir. The key is never logged and no message quotes it.
 */

export const sponsorshipConfigSchema = z
  .object({
    paymasterV06: z
      .string()
      .refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')
      .transform((a) => toLowerAddress(a))
      .optional(),
    depositFloor: z
      .string()
      .refine((v) => parseDecimal(v) !== null, 'must be a decimal string in native units, such as "0.5"')
      .default('0.1'),
    ceilings: ceilingsConfigSchema.optional(),
  })
  .strict()

export type SponsorshipConfig = z.infer<typeof sponsorshipConfigSchema>

const KEY_RE = /^0x[0-9a-fA-F]{64}$/

/** The paymaster signer, or null when none is configured (sponsorship is then off). */
export function loadPaymasterSigner(opts: {
  devMode: boolean
  dataDir: string
  env: Readonly<Record<string, string | undefined>>
}): LocalAccount | null {
  // Dev mode's key exists once the devnet's contracts are deployed; before that, sponsorship is off.
  const devKey = opts.devMode ? paymasterSignerKeyFile(opts.dataDir) : undefined
  const file = opts.env.HALYARD_PAYMASTER_KEY_FILE ?? (devKey && existsSync(devKey) ? devKey : undefined)
  let key: string | undefined
  let source: string
  if (file) {
    if (!existsSync(file)) throw new Error(`paymaster signer key file ${file} does not exist`)
    key = readFileSync(file, 'utf8').trim()
    source = `the file ${file}`
  } else {
    key = opts.env.HALYARD_PAYMASTER_KEY
    source = 'HALYARD_PAYMASTER_KEY'
  }
  if (key === undefined || key === '') return null
  if (!KEY_RE.test(key)) throw new Error(`${source} does not hold a 0x-prefixed 32-byte hex key`)
  return privateKeyToAccount(key as `0x${string}`)
}

/** Wei from a decimal in native units (18 decimals). */
export function nativeToWei(v: string): bigint {
  const d = parseDecimal(v)
  if (!d || d.scale > 18) throw new Error(`${v} is not a decimal with at most 18 decimals`)
  return d.mantissa * 10n ** BigInt(18 - d.scale)
}

/** One network's paymasters: v0.7 from accountAbstraction, v0.6 from sponsorship.paymasterV06. */
export function configuredPaymasters(net: Network, paymasterV06?: Address): SponsorPaymaster[] {
  const aa = net.config.accountAbstraction
  const out: SponsorPaymaster[] = []
  if (aa?.entryPoints.v07 && aa.paymaster)
    out.push({ version: 'v07', entryPoint: aa.entryPoints.v07, paymaster: aa.paymaster })
  if (aa?.entryPoints.v06 && paymasterV06)
    out.push({ version: 'v06', entryPoint: aa.entryPoints.v06, paymaster: paymasterV06 })
  return out
}

/** The service's and the settlement poller's view of one network; null without a paymaster. */
export function sponsorNetwork(
  net: Network,
  prices: PriceSource,
  cfg: SponsorshipConfig | undefined,
  paymasterV06?: Address,
): { spec: SponsorNetworkSpec; settlement: SettlementNetwork } | null {
  const paymasters = configuredPaymasters(net, paymasterV06 ?? cfg?.paymasterV06)
  if (paymasters.length === 0 || net.chainId === undefined) return null
  return {
    spec: {
      slug: net.slug,
      chainId: net.chainId,
      rpc: net.pool,
      paymasters,
      prices,
      depositFloorWei: nativeToWei(cfg?.depositFloor ?? '0.1'),
      ceilings: planCeilings(cfg?.ceilings),
      nativeSymbol: net.config.nativeCurrency?.symbol ?? 'native',
    },
    settlement: {
      slug: net.slug,
      chainId: net.chainId,
      rpc: net.pool,
      paymasters,
      confirmations: net.config.confirmations,
    },
  }
}
