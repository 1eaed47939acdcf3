import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import type { DataApis } from '../tokens/register.ts'
import { registerNftRoutes } from './routes.ts'
import { NftService } from './service.ts'

/**
 * NFT API (docs/data-apis.md): reads holdings from the indexer's tables and contract views through the
 * Token API's Multicall3 reader; loopback metadata servers are reachable in dev mode only.
 */
export function registerNfts(
  host: FeatureHost,
  deps: { data: DataApis; indexer: IndexerService },
): NftService {
  const { ctx } = host
  const { data } = deps
  const nfts = new NftService({
    db: ctx.storage.db,
    reader: (net) => data.tokens.reader(net),
    config: (net) => data.sources(net).config,
    allowLoopback: ctx.devMode,
    logger: ctx.logger.child({ feature: 'nfts' }),
  })
  registerNftRoutes(host.app, nfts, deps.indexer.history)
  host.addTask({ name: 'nft-metadata', stop: () => nfts.stop() })
  return nfts
}
