import { Counter } from 'prom-client'
import type { FeatureHost } from '../http/host.ts'
import { Mailer } from '../mail/sender.ts'
import { NftService } from '../nfts/service.ts'
import type { Address } from '../types.ts'
import { CrossWake, instanceId } from './cross-wake.ts'
import { DeliveryWorker } from './delivery.ts'
import { camelData } from './form-b.ts'
import { WebhookMatcher } from './matcher.ts'
import { PendingWatcher } from './pending.ts'
import { limitFor } from './quota.ts'
import { ReceiptReader } from './receipts.ts'
import { registerWebhookRoutes } from './routes.ts'
import { WebhookService } from './service.ts'
import { webhookSettings } from './settings.ts'
import { TokenMetadata } from './token-metadata.ts'

declare module '../http/host.ts' {
  interface FeatureServices {
    /** Webhooks (src/webhooks): subscriptions, delivery history, readiness checks. */
    webhooks: WebhookService
  }
}

/**
 * Webhooks (spec 2.7, 3.2, 4.5, 6.1, 6.2): the API, the matcher (an indexer consumer, so events
 * commit with the block), and the delivery worker every instance runs (claims are
 * SKIP LOCKED, so any number of instances cooperate).
 */
export function registerWebhooks(host: FeatureHost): WebhookService {
  const { ctx } = host
  const settings = webhookSettings(ctx.env, ctx.devMode)
  const db = ctx.storage.db
  const mailer = new Mailer(ctx.storage.db, ctx.logger, ctx.env.SMTP_URL)
  const { services } = host
  const nfts = new NftService({
    db,
    reader: (net) => services.data.tokens.reader(net),
    config: (net) => services.data.sources(net).config,
    allowLoopback: ctx.devMode,
    logger: ctx.logger.child({ feature: 'webhooks-nft-metadata' }),
  })
  // Operator alarm (see also service.readinessChecks): attempts that found a signing secret
  // this HALYARD_SECRET_KEY cannot decrypt. A counter, so cluster aggregation sums it.
  const undecryptable = new Counter({
    name: 'halyard_webhook_undecryptable_secret_attempts_total',
    help: 'Webhook delivery attempts skipped because the signing secret does not decrypt with HALYARD_SECRET_KEY',
    registers: [ctx.metrics.registry],
  })
  // The indexer's reader (src/indexer/traces.ts): one source for native_transfers and these events.
  const traces = services.indexer.traces
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
  const service = new WebhookService(
    db,
    ctx.networks,
    ctx.secretKey,
    { devMode: settings.devMode, allowlist: settings.delivery.allowlist, resolve: settings.delivery.resolve },
    mailer,
    ctx.logger,
    wake,
    settings.limits,
    traces,
  )
  worker = new DeliveryWorker(
    db,
    ctx.secretKey,
    {
      ...settings.delivery,
      instance,
      onUndecryptable: () => undecryptable.inc(),
      // Its own NftService over the same tables and cache as the NFT API (src/nfts).
      nftMetadata: async (slug, contract, tokenId) => {
        const m = await nfts.metadata(ctx.networks.getBySlug(slug), contract as Address, tokenId, false)
        return camelData(m as unknown as Record<string, unknown>)
      },
    },
    (webhookId, lastError) => service.pauseAfterFailures(webhookId, lastError),
    ctx.logger.child({ component: 'webhooks' }),
    (webhookId, reason) => service.disable(webhookId, reason),
  )
  const matcher = new WebhookMatcher(
    db,
    new TokenMetadata(ctx.networks),
    new ReceiptReader(ctx.networks),
    (slug) => ctx.networks.getBySlug(slug).config.nativeCurrency.symbol,
    ctx.logger,
    {
      chainIdOf: (slug) => ctx.networks.getBySlug(slug).chainId ?? 0,
      quotaOf: (plan) => limitFor(settings.limits.deliveriesPerDay, plan),
      traces,
    },
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
  services.webhooks = service
  // Mempool events: from the WebSocket feature's pending stream (registered after this one,
  // so read when the jobs start).
  const pending = new PendingWatcher(
    db,
    ctx.networks,
    () => host.services.ws,
    ctx.logger.child({ component: 'webhooks' }),
    wake,
  )
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
