import type { Network } from '../chains/registry.ts'
import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import type { DataApis } from '../tokens/register.ts'
import { registerTransferRoutes } from './routes.ts'
import { TransferService } from './service.ts'

/** Transfer API (docs/data-apis.md): reads the indexer's transfer tables, token metadata from the Token API. */
export function registerTransfers(
  host: FeatureHost,
  deps: { data: DataApis; indexer: IndexerService },
): TransferService {
  const { ctx } = host
  const { data, indexer } = deps
  const transfers = new TransferService({
    db: ctx.storage.db,
    metas: (net, contracts) => data.tokens.metas(net, contracts),
    internalUnavailable: (net) => internalUnavailable(indexer, net),
  })
  registerTransferRoutes(host.app, transfers, indexer.history)
  return transfers
}

/** Why the index holds no internal transfers for `net` (the indexer's own reason), or null. */
function internalUnavailable(indexer: IndexerService, net: Network): string | null {
  const a = indexer.internalTransfersAvailability(net.slug)
  return a.available ? null : a.reason
}
