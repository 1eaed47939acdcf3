import type { FeatureHost } from '../http/host.ts'
import { DeliveryWorker } from './delivery.ts'
import { Mailer } from './mailer.ts'
import { WebhookMatcher } from './matcher.ts'
import { ReceiptReader } from './receipts.ts'
import { registerWebhookRoutes } from './routes.ts'
import { WebhookService } from './service.ts'
import { webhookSettings } from './settings.ts'
import { TokenMetadata } from './token-metadata.ts'

/**
 * Webhooks (spec 2.7, 3.2, 4.5, 6.1): the API, the matcher (an indexer consumer, so events
 * commit with the block), and the delivery worker every instance runs (claims are
 * SKIP LOCKED, so any number of instances cooperate).
 */
export function registerWebhooks(host: FeatureHost): WebhookService {
  const { ctx } = host
  const settings = webhookSettings(ctx.env, ctx.devMode)
  const db = ctx.storage.db
  const mailer = new Mailer(ctx.storage.db, ctx.logger, ctx.env.SMTP_URL)
  let worker: DeliveryWorker | undefined
  const wake = () => worker?.wake()
  const service = new WebhookService(
    db,
    ctx.networks,
    ctx.secretKey,
    { devMode: settings.devMode, allowlist: settings.delivery.allowlist, resolve: settings.delivery.resolve },
    mailer,
    ctx.logger,
    wake,
  )
  worker = new DeliveryWorker(
    db,
    ctx.secretKey,
    settings.delivery,
    (webhookId, lastError) => service.pauseAfterFailures(webhookId, lastError),
    ctx.logger.child({ component: 'webhooks' }),
  )
  const matcher = new WebhookMatcher(
    db,
    new TokenMetadata(ctx.networks),
    new ReceiptReader(ctx.networks),
    (slug) => ctx.networks.getBySlug(slug).config.nativeCurrency.symbol,
    ctx.logger,
  )
  // Events become visible when the indexer's transaction commits: the indexer calls the
  // matcher's afterCommit right then. Events the matcher leased to this worker as it inserted
  // them go out at once; any others are claimed at once instead of at the next poll.
  matcher.onEvents = wake
  matcher.handoff = worker
  const w = worker
  matcher.onRollbackStarted = () => w.noteRollback()
  host.services.indexer.addConsumer(matcher)
  registerWebhookRoutes(host.app, ctx.networks, service)
  host.onStart(() => {
    w.start()
    mailer.start()
  })
  host.addTask({
    name: 'webhook-delivery',
    stop: async () => {
      await w.stop()
      await mailer.stop()
    },
  })
  return service
}
