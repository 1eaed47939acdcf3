import { checkAccountAbstractionCode } from '../aa/contract-check.ts'
import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import type { Address } from '../types.ts'
import { WalletDeploymentTracker } from './deployments.ts'
import { registerWalletRoutes } from './routes.ts'
import { WalletService } from './service.ts'

/**
 * Smart wallets (docs/wallets.md): routes, the indexer consumer that tracks deployments, and the
 * start-up check that every configured ERC-4337 contract has code (a clear error otherwise).
 */
export function registerWallets(host: FeatureHost, deps: { indexer: IndexerService }): WalletService {
  const { ctx } = host
  const entryPoints = new Map<string, Set<Address>>()
  for (const net of ctx.networks.all()) {
    const eps = net.config.accountAbstraction?.entryPoints
    if (!eps) continue
    entryPoints.set(net.slug, new Set([eps.v06, eps.v07].filter((a): a is Address => a !== undefined)))
  }
  const { indexer } = deps
  indexer.addConsumer(new WalletDeploymentTracker(entryPoints, indexer.skippedLogs.report))
  host.onStart(() => checkAccountAbstractionCode(ctx.networks.all(), ctx.logger))
  const wallets = new WalletService({
    db: ctx.storage.db,
    logger: ctx.logger,
    networkBySlug: (slug) => ctx.networks.getBySlug(slug),
    indexedHead: async (slug) => (await indexer.cursor(slug))?.number ?? null,
  })
  registerWalletRoutes(host.app, ctx.networks, wallets)
  return wallets
}
