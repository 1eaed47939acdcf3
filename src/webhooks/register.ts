import { Counter } from 'prom-client'
import type { FeatureHost } from '../http/host.ts'
import type { IndexerService } from '../indexer/service.ts'
import { Mailer } from '../mail/sender.ts'
import type { NftService } from '../nfts/service.ts'
import type { Address } from '../types.ts'
import type { WsService } from '../ws/service.ts'
import { CrossWake, instanceId } from './cross-wake.ts'
import { DeliveryWorker } from './delivery.ts'
import { camelData } from './form-b.ts'
import { WebhookMatcher } from './matcher.ts'
import { registerWebhookMetrics } from './metrics.ts'
import { PendingWatcher } from './pending.ts'
import { limitFor } from './quota.ts'
import { ReceiptReader } from './receipts.ts'
import { registerWebhookRoutes } from './routes.ts'
import { registerWebhookEventRoutes } from './routes-events.ts'
import { WebhookService } from './service.ts'
import { webhookSettings } from './settings.ts'
import { TokenMetadata } from './token-metadata.ts'

/**
 * Webhooks (docs/webhooks.md): the API, the matcher (an indexer consumer, so events
 * commit with the block), and the delivery worker every instance runs (claims are
 * SKIP LOCKED, so any number of instances cooperate).
 */
export function registerWebhooks(
  host: FeatureHost,
  deps: { indexer: IndexerService; nfts: NftService; ws: WsService },
): WebhookService {
  const { ctx } = host
  const settings = webhookSettings(ctx.env, ctx.devMode)
  const db = ctx.storage.db
  const mailer = new Mailer({ db: ctx.storage.db, logger: ctx.logger, smtpUrl: ctx.env.SMTP_URL })
  const { indexer, nfts, ws } = deps
  // Operator alarm (see also service.readinessChecks): attempts that found a signing secret
  // this HALYARD_SECRET_KEY cannot decrypt. A counter, so cluster aggregation sums it.
  const undecryptable = new Counter({
    name: 'halyard_webhook_undecryptable_secret_attempts_total',
    help: 'Webhook delivery attempts skipped because the signing secret does not decrypt with HALYARD_SECRET_KEY',
    registers: [ctx.metrics.registry],
  })
  // The indexer's reader (src/indexer/traces.ts): one source for native_transfers and these events.
  const traces = indexer.traces
  let worker: DeliveryWorker | undefined
  const instance = instanceId(ctx.env.HALYARD_INSTANCE_ID)
  const cross = new CrossWake(
    ctx.storage,
    ctx.env.DATABASE_URL,
    () => worker?.wake(),
    ctx.logger.child({ component: 'webhooks' }),
  )
  // New work here: this worker claims at once, and the other instances are told (one of them
  // may have room first).
  const wake = () => {
    worker?.wake()
    cross.notify()
  }
  const service = new WebhookService({
    db,
    networks: ctx.networks,
    secretKey: ctx.secretKey,
    urlPolicy: {
      devMode: settings.devMode,
      allowlist: settings.delivery.allowlist,
      resolve: settings.delivery.resolve,
    },
    mailer,
    logger: ctx.logger,
    onNewWork: wake,
    limits: settings.limits,
    traces,
  })
  worker = new DeliveryWorker({
    db,
    secretKey: ctx.secretKey,
    opts: {
      ...settings.delivery,
      instance,
      onUndecryptable: () => undecryptable.inc(),
      // The NFT API's own service (src/nfts): one metadata cache and fetch queue per process.
      nftMetadata: async (slug, contract, tokenId) => {
        const m = await nfts.metadata(ctx.networks.getBySlug(slug), contract as Address, tokenId, false)
        return camelData(m as unknown as Record<string, unknown>)
      },
    },
    onPause: (webhookId, lastError) => service.pauseAfterFailures(webhookId, lastError),
    logger: ctx.logger.child({ component: 'webhooks' }),
    onDisable: (webhookId, reason) => service.disable(webhookId, reason),
    onOutcome: registerWebhookMetrics(ctx.metrics.registry, db, (err) =>
      ctx.logger.debug({ err: err.message }, 'webhook queue metrics not read'),
    ),
  })
  const matcher = new WebhookMatcher({
    db,
    tokens: new TokenMetadata(ctx.networks),
    receipts: new ReceiptReader(ctx.networks),
    nativeSymbol: (slug) => ctx.networks.getBySlug(slug).config.nativeCurrency.symbol,
    logger: ctx.logger,
    chainIdOf: (slug) => ctx.networks.getBySlug(slug).chainId ?? 0,
    quotaOf: (plan) => limitFor(settings.limits.deliveriesPerDay, plan),
    traces,
  })
  // Events become visible when the indexer's transaction commits: the indexer calls the
  // matcher's afterCommit right then. Events the matcher leased to this worker as it inserted
  // them go out at once; any others are claimed at once instead of at the next poll.
  matcher.onEvents = wake
  matcher.handoff = worker
  const w = worker
  matcher.onRollbackStarted = () => w.noteRollback()
  indexer.addConsumer(matcher)
  registerWebhookRoutes(host.app, ctx.networks, service)
  registerWebhookEventRoutes(host.app, ctx.networks, service)
  // Mempool events: from the WebSocket feature's pending stream.
  const pending = new PendingWatcher({
    db,
    networks: ctx.networks,
    streams: () => ws,
    logger: ctx.logger.child({ component: 'webhooks' }),
    onEvents: wake,
  })
  // Delivery runs in every process, cluster workers included (claims are SKIP LOCKED, and
  // cross.notify wakes the others): not an onStart job, which only the cluster's leader runs.
  // The mailer and the mempool watcher stay singletons. HALYARD_WEBHOOK_DELIVERY=off keeps an
  // instance to the API and matching (its notices still wake the instances that deliver).
  const delivers = ctx.env.HALYARD_WEBHOOK_DELIVERY !== 'off'
  let delivering: Promise<void> | undefined = cross
    .start()
    .catch((err) =>
      ctx.logger.warn(
        { err: (err as Error).message },
        'webhook wake listener did not start; other instances are seen at the next poll',
      ),
    )
    .then(() => {
      if (delivers) w.start()
    })
  host.onStart(() => {
    mailer.start()
    pending.start()
  })
  host.addTask({
    name: 'webhook-delivery',
    stop: async () => {
      await pending.stop()
      // Aborts the shared metadata fetches a delivery may be waiting on (the NFT API's routes
      // closed with the server before any task stops; its own task stops it again, a no-op).
      await nfts.stop()
      await delivering
      delivering = undefined
      await w.stop()
      await cross.stop()
      await mailer.stop()
    },
  })
  return service
}
