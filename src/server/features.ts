import { registerAlchemy } from '../alchemy/register.ts'
import { type Bundler, registerBundler } from '../bundler/register.ts'
import { registerDashboard } from '../dashboard/register.ts'
import type { DashboardSessions } from '../dashboard/sessions.ts'
import type { GasPriceService } from '../gas/price-service.ts'
import { registerGasPrices } from '../gas/register-prices.ts'
import { registerSponsorship, type Sponsorship } from '../gas/register-sponsorship.ts'
import type { FeatureHost } from '../http/host.ts'
import { registerIndexer } from '../indexer/register.ts'
import type { IndexerService } from '../indexer/service.ts'
import { registerNfts } from '../nfts/register.ts'
import type { NftService } from '../nfts/service.ts'
import { registerOpenApi } from '../openapi/register.ts'
import { registerOpenRpc } from '../openrpc/register.ts'
import { type RequestLog, registerRequests } from '../requests/register.ts'
import { registerRpc } from '../rpc/register.ts'
import type { RpcService } from '../rpc/service.ts'
import { type DataApis, registerTokens } from '../tokens/register.ts'
import { registerTransfers } from '../transfers/register.ts'
import type { TransferService } from '../transfers/service.ts'
import type { UsageRecorder } from '../usage/recorder.ts'
import { registerUsage } from '../usage/register.ts'
import { registerWallets } from '../wallets/register.ts'
import type { WalletService } from '../wallets/service.ts'
import { registerWebhooks } from '../webhooks/register.ts'
import type { WebhookService } from '../webhooks/service.ts'
import { registerWs } from '../ws/register.ts'
import type { WsService } from '../ws/service.ts'

/** Every feature's service, as its register function returned it (the runtime and tests read them). */
export interface Features {
  readonly usage: UsageRecorder
  /** The request explorer's recorder and retention. */
  readonly requests: RequestLog
  readonly rpc: RpcService
  readonly indexer: IndexerService
  /** Token API service, price sources and token lists per network (NFT API reads them too). */
  readonly data: DataApis
  readonly nfts: NftService
  readonly transfers: TransferService
  readonly ws: WsService
  readonly webhooks: WebhookService
  readonly wallets: WalletService
  readonly gasPrices: GasPriceService
  readonly sponsorship: Sponsorship
  readonly bundler: Bundler
  /** Dashboard sign-in links and sessions: the CLI and dev banner make links. */
  readonly dashboard: DashboardSessions
}

/**
 * Registers every feature's routes and background work, in dependency order. One line per
 * feature: a reader finds any behaviour from here in two hops. Each feature receives the
 * services it uses as arguments, so a feature registered before what it needs does not compile.
 */
export async function registerFeatures(host: FeatureHost): Promise<Features> {
  // First: its flush task stops last, after every other task has charged what it owed.
  const usage = registerUsage(host)
  // Before every JSON-RPC surface: they find its recorder when they are defined.
  const requests = registerRequests(host)
  const rpc = registerRpc(host)
  const indexer = registerIndexer(host)
  const data = await registerTokens(host, { indexer })
  const nfts = registerNfts(host, { data, indexer })
  const transfers = registerTransfers(host, { data, indexer })
  const ws = registerWs(host, { rpc })
  const webhooks = registerWebhooks(host, { indexer, nfts, ws })
  const wallets = registerWallets(host, { indexer })
  const gasPrices = registerGasPrices(host)
  const sponsorship = await registerSponsorship(host, { rpc, data })
  const bundler = registerBundler(host, { rpc, gasPrices, sponsorship })
  registerAlchemy(host, { rpc, data, nfts, transfers, ws, sponsorship, bundler, history: indexer.history })
  registerOpenApi(host)
  registerOpenRpc(host)
  const dashboard = registerDashboard(host, { webhooks, sponsorship, wallets, indexer, requests })
  return {
    usage,
    requests,
    rpc,
    indexer,
    data,
    nfts,
    transfers,
    ws,
    webhooks,
    wallets,
    gasPrices,
    sponsorship,
    bundler,
    dashboard,
  }
}
