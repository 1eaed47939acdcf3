import type { FastifyInstance } from 'fastify'
import type { GasPriceService } from '../gas/price-service.ts'
import { registerGasPrices } from '../gas/register-prices.ts'
import { registerIndexer } from '../indexer/register.ts'
import type { IndexerService } from '../indexer/service.ts'
import { registerNfts } from '../nfts/register.ts'
import { type DataApis, registerTokens } from '../tokens/register.ts'
import { registerWallets } from '../wallets/register.ts'
import type { WalletService } from '../wallets/service.ts'
import { registerWebhooks } from '../webhooks/register.ts'
import { registerWs } from '../ws/register.ts'
import type { WsService } from '../ws/service.ts'
import type { AppContext, BackgroundTask } from './runtime.ts'

/**
 * Services one feature offers another (a feature uses another only through its service).
 * Each feature adds its field here when it registers.
 */
export type FeatureServices = {
  /** Chain indexer: `addConsumer` before start to see every block in order (src/indexer/types.ts). */
  indexer: IndexerService
  /** Token API service, price sources and token lists per network (NFT API reads them too). */
  data: DataApis
  /** WebSocket subscriptions (src/ws): connections, shared upstream streams, tuning for tests. */
  ws: WsService
  /** Smart wallets (src/wallets): counterfactual addresses, deployment status per network. */
  wallets: WalletService
  /** Gas price estimates per network (src/gas/price-service.ts), cached per head. */
  gasPrices: GasPriceService
}

export interface FeatureHost {
  readonly app: FastifyInstance
  readonly ctx: AppContext
  readonly services: FeatureServices
  /** A worker stopped (in reverse order) when the server closes, before storage closes. */
  addTask(task: BackgroundTask): void
  /**
   * Runs once every feature has registered, before the server listens: start background loops
   * here, so that consumers other features attach (e.g. to the indexer) see every block.
   */
  onStart(fn: () => Promise<void> | void): void
}

/**
 * Registers every feature's routes and background work, in dependency order. One line per
 * feature: a reader finds any behaviour from here in two hops.
 */
export async function registerFeatures(host: FeatureHost): Promise<void> {
  host.services.indexer = registerIndexer(host)
  host.services.data = await registerTokens(host)
  registerNfts(host)
  registerWebhooks(host)
  host.services.ws = registerWs(host)
  host.services.wallets = registerWallets(host)
  host.services.gasPrices = registerGasPrices(host)
}
