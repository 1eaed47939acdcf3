import { type FeatureHost, runWorker } from '../http/host.ts'
import { UpstreamHeadSignal } from './head-signal.ts'
import { IndexerService } from './service.ts'

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
  runWorker(host, 'indexer', indexer)
  return indexer
}
