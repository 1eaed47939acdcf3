import type { Bundler } from '../bundler/register.ts'
import { paymasterRegistry } from '../gas/paymaster-rpc.ts'
import type { Sponsorship } from '../gas/register-sponsorship.ts'
import type { FeatureHost } from '../http/host.ts'
import type { IndexHistory } from '../indexer/history.ts'
import type { NftService } from '../nfts/service.ts'
import type { RpcService } from '../rpc/service.ts'
import type { DataApis } from '../tokens/register.ts'
import { assetTransfersRow } from '../transfers/asset-transfers.ts'
import type { TransferService } from '../transfers/service.ts'
import type { WsService } from '../ws/service.ts'
import { receiptRows } from './methods/receipts.ts'
import { simulateRows } from './methods/simulate.ts'
import { tokenRows } from './methods/tokens.ts'
import { registerAlchemyNftRoutes } from './nft-routes.ts'
import { AlchemyNftApi } from './nft-service.ts'
import { alchemyRegistry } from './registry.ts'
import { registerAlchemyRpcRoute } from './routes.ts'
import { alchemyWsSurface, registerAlchemyWsRoute } from './ws.ts'

/**
 * The Alchemy-compatible root (docs/alchemy.md): `/alchemy/{network}/v2/{key}` for JSON-RPC, the NFT
 * API v3 and WebSocket, served by the same services as Halyard's own routes.
 */
export interface AlchemyDeps {
  rpc: RpcService
  data: DataApis
  nfts: NftService
  transfers: TransferService
  ws: WsService
  sponsorship: Sponsorship
  bundler: Bundler
  /** Index coverage: getNFTsForOwner answers carry the index headers. */
  history: IndexHistory
}

export function registerAlchemy(host: FeatureHost, deps: AlchemyDeps): void {
  const { app, ctx } = host
  const { tokens, sources } = deps.data
  const registry = alchemyRegistry(
    [
      ...tokenRows({ tokens, sources, db: ctx.storage.db, logger: ctx.logger }),
      ...receiptRows(ctx.logger),
      ...simulateRows({ tokens, sources, logger: ctx.logger }),
      assetTransfersRow({ transfers: deps.transfers, logger: ctx.logger }),
    ],
    [
      // Alchemy's one URL also answers ERC-4337, ERC-7677 and account-kit's methods (@account-kit/infra).
      deps.bundler.registry,
      paymasterRegistry(deps.sponsorship.sponsor, ctx.logger, ctx.networks),
    ],
  )
  registerAlchemyRpcRoute(app, { rpc: deps.rpc, charger: ctx.charger, registry })
  // The WebSocket upgrade at the same URL (src/ws serves the connections); a plain GET is told so.
  deps.ws.addSurface(alchemyWsSurface(registry))
  registerAlchemyWsRoute(app)
  // NFT API v3 under both roots, over Halyard's index and NFT metadata cache.
  registerAlchemyNftRoutes(app, {
    api: new AlchemyNftApi(ctx.storage.db, deps.nfts),
    charger: ctx.charger,
    history: deps.history,
  })
}
