import type { Network } from '../chains/registry.ts'
import type { PriceSource } from '../prices/sources.ts'
import type { Address } from '../types.ts'
import { planCeilings } from './sponsor-ceilings.ts'
import { nativeToWei, type SponsorshipConfig } from './sponsor-config.ts'
import type { SponsorNetworkSpec, SponsorPaymaster } from './sponsor-service.ts'
import type { SettlementNetwork } from './sponsor-settlement.ts'

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
