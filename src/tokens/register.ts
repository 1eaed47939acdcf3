import type { Network } from '../chains/registry.ts'
import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import { buildDataSources, type NetworkDataSources } from '../prices/registry.ts'
import { registerTokenRoutes } from './routes.ts'
import { TokenService } from './service.ts'

export interface DataApis {
  tokens: TokenService
  sources: (net: Network) => NetworkDataSources
}

/** Token API (docs/data-apis.md): price sources and token lists per EVM network, then the routes. */
export async function registerTokens(
  host: FeatureHost,
  deps: { indexer: IndexerService },
): Promise<DataApis> {
  const { ctx } = host
  const bySlug = new Map<string, NetworkDataSources>()
  for (const net of ctx.networks.all()) {
    if (net.kind !== 'evm') continue
    bySlug.set(
      net.slug,
      await buildDataSources(net, { devMode: ctx.devMode, dataDir: ctx.env.dataDir, logger: ctx.logger }),
    )
  }
  const sources = (net: Network) => {
    const s = bySlug.get(net.slug)
    if (!s) throw new Error(`no data sources for ${net.slug}`)
    return s
  }
  const { indexer } = deps
  const tokens = new TokenService({
    db: ctx.storage.db,
    sources,
    indexCursor: (slug) => indexer.cursor(slug),
  })
  registerTokenRoutes(host.app, tokens, indexer.history)
  return { tokens, sources }
}
