import { paymasterRegistry } from '../gas/paymaster-rpc.ts'
import type { FeatureHost } from '../http/host.ts'
import { assetTransfersRow } from '../transfers/asset-transfers.ts'
import { receiptRows } from './methods/receipts.ts'
import { simulateRows } from './methods/simulate.ts'
import { tokenRows } from './methods/tokens.ts'
import { registerAlchemyNftRoutes } from './nft-routes.ts'
import { AlchemyNftApi } from './nft-service.ts'
import { alchemyRegistry } from './registry.ts'
import { registerAlchemyRpcRoute } from './routes.ts'
import { alchemyWsSurface, registerAlchemyWsRoute } from './ws.ts'

/**
 * The Alchemy-compatible root (issue 19): `/alchemy/{network}/v2/{key}` for JSON-RPC, the NFT
 * API v3 and WebSocket, served by the same services as Halyard's own routes.
 */
export function registerAlchemy(host: FeatureHost): void {
  const { app, ctx, services } = host
  const { tokens, sources } = services.data
  const registry = alchemyRegistry(
    [
      ...tokenRows({ tokens, sources, db: ctx.storage.db, logger: ctx.logger }),
      ...receiptRows(ctx.logger),
      ...simulateRows({ tokens, sources, logger: ctx.logger }),
      // Set by registerTransfers (src/transfers/register.ts) when that feature runs.
      ...(services.transfers
        ? [assetTransfersRow({ transfers: services.transfers, logger: ctx.logger })]
        : []),
    ],
    [
      // Alchemy's one URL also answers ERC-4337, ERC-7677 and account-kit's methods (@account-kit/infra).
      services.bundler.registry,
      paymasterRegistry(services.sponsorship.sponsor, ctx.logger, ctx.networks),
    ],
  )
  registerAlchemyRpcRoute(app, { rpc: services.rpc, charger: ctx.charger, registry })
  // The WebSocket upgrade at the same URL (src/ws serves the connections); a plain GET is told so.
  services.ws.addSurface(alchemyWsSurface(registry))
  registerAlchemyWsRoute(app)
  // NFT API v3 under both roots, over Halyard's index and NFT metadata cache.
  registerAlchemyNftRoutes(app, {
    api: new AlchemyNftApi(ctx.storage.db, services.nfts),
    charger: ctx.charger,
  })
}
