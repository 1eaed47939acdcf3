import type { FeatureHost } from '../http/host.ts'
import { registerNftRoutes } from './routes.ts'
import { NftService } from './service.ts'

declare module '../http/host.ts' {
  interface FeatureServices {
    /** NFT metadata, collections and holdings (also served at the Alchemy-compatible root). */
    nfts: NftService
  }
}

/**
 * NFT API (spec 4.3): reads holdings from the indexer's tables and contract views through the
 * Token API's Multicall3 reader; loopback metadata servers are reachable in dev mode only.
 */
export function registerNfts(host: FeatureHost): NftService {
  const { ctx, services } = host
  const nfts = new NftService({
    db: ctx.storage.db,
    reader: (net) => services.data.tokens.reader(net),
    config: (net) => services.data.sources(net).config,
    allowLoopback: ctx.devMode,
    logger: ctx.logger.child({ feature: 'nfts' }),
  })
  host.services.nfts = nfts
  registerNftRoutes(host.app, nfts)
  host.addTask({ name: 'nft-metadata', stop: () => nfts.stop() })
  return nfts
}
