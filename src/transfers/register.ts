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

type Availability = boolean | { available: boolean; reason?: string | null; message?: string | null }

/**
 * The indexer says whether it fills internal transfers for a network
 * (`internalTransfersAvailability(slug)`); read structurally so either answer form works.
 */
async function internalUnavailable(indexer: IndexerService, net: Network): Promise<string | null> {
  const ask = (indexer as unknown as { internalTransfersAvailability?: (slug: string) => unknown })
    .internalTransfersAvailability
  if (typeof ask !== 'function') return 'this indexer does not index internal transfers'
  const a = (await ask.call(indexer, net.slug)) as Availability | null | undefined
  if (a === true || (typeof a === 'object' && a !== null && a.available)) return null
  const why = typeof a === 'object' && a !== null ? (a.reason ?? a.message) : undefined
  return why ?? 'its upstream answers neither debug_traceBlockByNumber (call tracer) nor trace_block'
}
