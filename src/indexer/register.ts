import type { FeatureHost } from '../http/host.ts'
import { UpstreamHeadSignal } from './head-signal.ts'
import { IndexerService } from './service.ts'

declare module '../http/host.ts' {
  interface FeatureServices {
    /** Chain indexer: `addConsumer` before start to see every block in order (src/indexer/types.ts). */
    indexer: IndexerService
  }
}

/** Creates the indexer service; its loops start once every feature has added its consumers. */
export function registerIndexer(host: FeatureHost): IndexerService {
  const { ctx } = host
  const indexer = new IndexerService({
    storage: ctx.storage,
    networks: ctx.networks,
    logger: ctx.logger,
    metrics: ctx.metrics,
    // Networks with upstream WebSocket URLs wake the follower on each new head (newHeads).
    heads: new UpstreamHeadSignal({ logger: ctx.logger }),
  })
  host.services.indexer = indexer
  host.onStart(() => indexer.start())
  host.addTask({ name: 'indexer', stop: () => indexer.stop() })
  return indexer
}
