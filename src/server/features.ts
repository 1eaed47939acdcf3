import { registerAlchemy } from '../alchemy/register.ts'
import { registerBundler } from '../bundler/register.ts'
import { registerDashboard } from '../dashboard/register.ts'
import { registerGasPrices } from '../gas/register-prices.ts'
import { registerSponsorship } from '../gas/register-sponsorship.ts'
import type { FeatureHost } from '../http/host.ts'
import { registerIndexer } from '../indexer/register.ts'
import { registerNfts } from '../nfts/register.ts'
import { registerOpenApi } from '../openapi/register.ts'
import { registerRpc } from '../rpc/register.ts'
import { registerTokens } from '../tokens/register.ts'
import { registerTransfers } from '../transfers/register.ts'
import { registerUsage } from '../usage/register.ts'
import { registerWallets } from '../wallets/register.ts'
import { registerWebhooks } from '../webhooks/register.ts'
import { registerWs } from '../ws/register.ts'

/**
 * Registers every feature's routes and background work, in dependency order. One line per
 * feature: a reader finds any behaviour from here in two hops. Each feature sets its own
 * field of `host.services` (declared in its register.ts).
 */
export async function registerFeatures(host: FeatureHost): Promise<void> {
  // First: its flush task stops last, after every other task has charged what it owed.
  registerUsage(host)
  registerRpc(host)
  registerIndexer(host)
  await registerTokens(host)
  registerNfts(host)
  registerTransfers(host)
  const webhooks = registerWebhooks(host)
  registerWs(host)
  registerWallets(host)
  registerGasPrices(host)
  await registerSponsorship(host)
  registerBundler(host)
  registerAlchemy(host)
  registerOpenApi(host)
  registerDashboard(host, { webhooks })
}
