import type { Network } from '../chains/registry.ts'
import type { GasPriceService } from '../gas/price-service.ts'
import type { Sponsorship } from '../gas/register-sponsorship.ts'
import { nativeToWei } from '../gas/sponsor-config.ts'
import { type FeatureHost, runWorker } from '../http/host.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import type { RpcService } from '../rpc/service.ts'
import type { Hex } from '../types.ts'
import { accountKitRows } from './account-kit.ts'
import type { BundlerConfig } from './config.ts'
import { ANVIL_EXECUTOR_KEYS } from './executor.ts'
import { bundlerRegistry, registerBundlerRoute } from './rpc.ts'
import { type BundlerNetworkSpec, BundlerService, configuredEntryPoints } from './service.ts'

export interface Bundler {
  /** Null when no network runs a bundler. */
  service: BundlerService | null
  /** The endpoint's methods (the Alchemy compat root serves them too). */
  registry: MethodRegistry
  /** `GET /ready` checks: one per network, failing while its executor is below its floor. */
  readinessChecks(): { name: string; check(): Promise<void> }[]
}

/**
 * The network's bundler settings, or null when it runs none: a network needs EntryPoints, and
 * outside dev mode a `bundler` key with executor keys. Dev mode uses anvil's account 8, which
 * neither the devnet tooling (account 0) nor the engine tests (account 9) send from.
 */
function bundlerSpec(net: Network, devMode: boolean): { spec: BundlerNetworkSpec; debug: boolean } | null {
  if (net.kind !== 'evm' || net.chainId === undefined) return null
  const cfg = net.config.bundler
  if (cfg?.enabled === false) return null
  const entryPoints = configuredEntryPoints(net)
  if (entryPoints.length === 0) return null
  const keys = (cfg?.executorKeys as Hex[] | undefined) ?? (devMode ? [ANVIL_EXECUTOR_KEYS[0] as Hex] : [])
  if (keys.length === 0) {
    if (cfg)
      throw new Error(
        `network ${net.slug}: bundler.executorKeys is required outside dev mode (the keys bundles are sent from)`,
      )
    return null
  }
  const spec: BundlerNetworkSpec = {
    slug: net.slug,
    chainId: net.chainId,
    rpc: net.pool,
    entryPoints,
    executorKeys: keys,
    validation: { mode: cfg?.mode ?? 'safe' },
    mempool: stakeSettings(cfg, devMode),
    ...(cfg?.minExecutorBalance ? { minExecutorBalance: nativeToWei(cfg.minExecutorBalance) } : {}),
    // Dev mode's anvil runs EVM calls one at a time fastest (measured with bench:bundler).
    maxConcurrentExecutions: cfg?.maxConcurrentExecutions ?? (devMode ? 1 : 4),
    // One transaction of ~4.7M gas from the executor: free on a devnet, an operator's choice elsewhere.
    deploySimulations: cfg?.deploySimulations ?? devMode,
  }
  return { spec, debug: cfg?.debugMethods ?? devMode }
}

/**
 * ERC-7562 MIN_STAKE_VALUE / MIN_UNSTAKE_DELAY: 1 native unit and the canonical mempool's
 * 86400 s for `serve`; in dev mode a 1 s delay, so a devnet's tests can stake and unstake within
 * a run (docs/bundler.md).
 */
export function stakeSettings(
  cfg: BundlerConfig | undefined,
  devMode: boolean,
): { minStake: bigint; minUnstakeDelaySec: bigint } {
  const minStake = cfg?.minStake !== undefined ? nativeToWei(cfg.minStake) : 10n ** 18n
  const delay = cfg?.minUnstakeDelay ?? (devMode ? 1 : 86_400)
  return { minStake, minUnstakeDelaySec: BigInt(delay) }
}

/**
 * The ERC-4337 bundler (ERC-4337; docs/bundler.md): the JSON-RPC endpoint on the shared endpoint, one
 * builder loop per network (started with the server, stopped before storage closes), and the
 * executor balance in `/ready`.
 */
export function registerBundler(
  host: FeatureHost,
  deps: { rpc: RpcService; gasPrices: GasPriceService; sponsorship: Sponsorship },
): Bundler {
  const { ctx } = host
  const specs: BundlerNetworkSpec[] = []
  const debugOn = new Set<string>()
  for (const net of ctx.networks.all()) {
    const s = bundlerSpec(net, ctx.devMode)
    if (!s) continue
    specs.push(s.spec)
    if (s.debug) debugOn.add(net.slug)
  }
  const service =
    specs.length > 0
      ? new BundlerService({
          storage: ctx.storage,
          networks: specs,
          logger: ctx.logger,
          registry: ctx.metrics.registry,
        })
      : null
  if (!service) ctx.logger.info('bundler off: no network has EntryPoints and executor keys')
  const served = new Set(specs.map((s) => s.slug))
  const registry = bundlerRegistry(service, ctx.logger, {
    serves: (n) => served.has(n.slug),
    debug: (n) => debugOn.has(n.slug),
    extra: accountKitRows({
      gasPrices: deps.gasPrices,
      sponsor: deps.sponsorship.sponsor,
      bundler: service,
      logger: ctx.logger,
      networks: ctx.networks,
    }),
  })
  registerBundlerRoute(host.app, { rpc: deps.rpc, charger: ctx.charger, registry })
  if (service) {
    runWorker(host, 'bundler', service)
  }
  const bundler: Bundler = {
    service,
    registry,
    readinessChecks: () =>
      specs.map((s) => ({
        name: `bundler executor ${s.slug}`,
        async check() {
          const b = await service?.executorBalance(s.slug)
          if (b && !b.ok) throw new Error(`executor ${b.executor}: balance ${b.wei} wei below the floor`)
        },
      })),
  }
  return bundler
}
