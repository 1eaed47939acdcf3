import type { Network } from '../chains/registry.ts'
import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import { registerTransferRoutes } from './routes.ts'
import { TransferService } from './service.ts'

declare module '../http/host.ts' {
  interface FeatureServices {
    /** Transfer API reads; `assetTransfersRow` (asset-transfers.ts) answers alchemy_getAssetTransfers with it. */
    transfers: TransferService
  }
}

/** Transfer API (issue 19): reads the indexer's transfer tables, token metadata from the Token API. */
export function registerTransfers(host: FeatureHost): TransferService {
  const { ctx, services } = host
  const transfers = new TransferService({
    db: ctx.storage.db,
    metas: (net, contracts) => services.data.tokens.metas(net, contracts),
    internalUnavailable: (net) => internalUnavailable(services.indexer, net),
  })
  registerTransferRoutes(host.app, transfers)
  services.transfers = transfers
  return transfers
}

/** Why the index holds no internal transfers for `net` (the indexer's own reason), or null. */
function internalUnavailable(indexer: IndexerService, net: Network): string | null {
  const a = indexer.internalTransfersAvailability(net.slug)
  return a.available ? null : a.reason
}
