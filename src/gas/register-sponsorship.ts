import { createPublicClient, http } from 'viem'
import type { Network } from '../chains/registry.ts'
import { findPaymasterV06 } from '../devnet/account-abstraction.ts'
import { type FeatureHost, runWorker } from '../http/host.ts'
import type { RpcService } from '../rpc/service.ts'
import type { DataApis } from '../tokens/register.ts'
import { type Address, toLowerAddress } from '../types.ts'
import { loadPaymasterSigner } from './paymaster-key.ts'
import { registerPaymasterMetrics } from './paymaster-metrics.ts'
import { paymasterRegistry, registerPaymasterRoute } from './paymaster-rpc.ts'
import { registerPolicyRoutes } from './policy-routes.ts'
import { PolicyService } from './policy-service.ts'
import { PolicyStore } from './policy-store.ts'
import { sponsorNetwork } from './sponsor-networks.ts'
import { registerSponsorRoutes } from './sponsor-routes.ts'
import { type SponsorNetworkSpec, SponsorService } from './sponsor-service.ts'
import { type SettlementNetwork, SponsorSettlement } from './sponsor-settlement.ts'

export interface Sponsorship {
  /** Null when no paymaster signer key is configured (policies can then not be created). */
  sponsor: SponsorService | null
  policies: PolicyService
  /** `GET /ready` checks: one per network, failing while a paymaster deposit is below its floor. */
  readinessChecks(): { name: string; check(): Promise<void> }[]
}

/**
 * Gas sponsorship (docs/gas.md): policy routes, `POST /v1/gas/sponsor`, the ERC-7677
 * paymaster on the shared JSON-RPC endpoint, and the settlement
 * poller that settles reservations from `UserOperationEvent`s and releases expired ones. Runs
 * after registerTokens: the native USD price comes from the network's price source.
 */
export async function registerSponsorship(
  host: FeatureHost,
  deps: { rpc: RpcService; data: DataApis },
): Promise<Sponsorship> {
  const { ctx } = host
  const signer = loadPaymasterSigner({ devMode: ctx.devMode, dataDir: ctx.env.dataDir, env: process.env })
  const specs: SponsorNetworkSpec[] = []
  const settlements: SettlementNetwork[] = []
  if (signer) {
    for (const net of ctx.networks.all()) {
      if (net.kind !== 'evm') continue
      const v06 = ctx.devMode ? await devPaymasterV06(net, signer.address) : undefined
      const pair = sponsorNetwork(net, deps.data.sources(net).prices, net.config.sponsorship, v06)
      if (!pair) continue
      specs.push(pair.spec)
      settlements.push(pair.settlement)
    }
    ctx.logger.info({ networks: specs.map((s) => s.slug), signer: signer.address }, 'gas sponsorship enabled')
  } else {
    ctx.logger.info('gas sponsorship off: no paymaster signer key configured')
  }
  const sponsor = signer ? new SponsorService({ storage: ctx.storage, networks: specs, signer }) : null
  if (sponsor) registerPaymasterMetrics(ctx.metrics, sponsor.deposits)
  const policies = new PolicyService(
    new PolicyStore(ctx.storage.db),
    (chain) => sponsor?.serves(chain) ?? false,
  )
  registerPolicyRoutes(host.app, ctx.networks, policies)
  registerSponsorRoutes(host.app, ctx.networks, sponsor)
  registerPaymasterRoute(host.app, {
    rpc: deps.rpc,
    charger: ctx.charger,
    registry: paymasterRegistry(sponsor, ctx.logger, ctx.networks),
  })

  if (sponsor && settlements.length > 0) {
    const settlement = new SponsorSettlement({
      storage: ctx.storage,
      store: sponsor.store,
      networks: settlements,
      logger: ctx.logger,
    })
    runWorker(host, 'gas sponsorship settlement', settlement)
  }

  const sponsorship: Sponsorship = {
    sponsor,
    policies,
    readinessChecks: () =>
      specs.map((s) => ({
        name: `paymaster deposit ${s.slug}`,
        async check() {
          const low = (await sponsor?.deposits.status())?.filter((d) => d.network === s.slug && !d.ok) ?? []
          if (low.length > 0)
            throw new Error(
              low
                .map((d) =>
                  d.deposit === null
                    ? `${d.version} paymaster ${d.paymaster}: deposit unreadable (${d.error})`
                    : `${d.version} paymaster ${d.paymaster}: deposit ${d.deposit} wei below the floor ${d.floor} wei`,
                )
                .join('; '),
            )
        },
      })),
  }
  return sponsorship
}

/** Dev mode deploys a v0.6 VerifyingPaymaster for the same signer; find it on the devnet. */
async function devPaymasterV06(net: Network, signer: Address): Promise<Address | undefined> {
  if (net.config.sponsorship?.paymasterV06 || !net.config.accountAbstraction?.entryPoints.v06)
    return undefined
  const url = net.config.upstreams[0]?.url
  if (!url) return undefined
  try {
    const client = createPublicClient({ transport: http(url) })
    return (await findPaymasterV06(client, toLowerAddress(signer))) ?? undefined
  } catch {
    // An unreachable devnet leaves v0.6 unsponsored; /ready reports the node itself.
    return undefined
  }
}
