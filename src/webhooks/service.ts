import { randomBytes } from 'node:crypto'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import { type EventType, matchKeys, parseConfig, type WebhookConfig } from './config.ts'
import { encryptSecret, generateSigningSecret } from './crypto.ts'
import type { Mail, Mailer } from './mailer.ts'
import { newEventId } from './matcher.ts'
import type { WebhookRow } from './store.ts'
import * as store from './store.ts'
import { checkWebhookUrl, type UrlPolicy } from './url-policy.ts'

export interface WebhookView {
  id: string
  url: string
  chain: string
  event_type: string
  config: WebhookConfig
  status: string
  status_reason: string | null
  created_at: string
  updated_at: string
}

/** Who creates a webhook: its account, and the e-mail a pause notice goes to. */
export interface WebhookOwner {
  accountId: string
  email: string
}

/** Webhook subscriptions (spec 2.7, 3.2, 4.5): validation, secrets, state transitions. */
export class WebhookService {
  constructor(
    private readonly db: DB,
    private readonly networks: NetworkRegistry,
    private readonly secretKey: Buffer,
    private readonly urlPolicy: UrlPolicy,
    private readonly mailer: Mailer,
    private readonly logger: Logger,
    private readonly onNewWork: () => void,
  ) {}

  checkUrl(raw: string): Promise<string> {
    return checkWebhookUrl(raw, this.urlPolicy)
  }

  async create(
    owner: WebhookOwner,
    input: { url: string; chain: string; event_type: EventType; config?: unknown },
  ) {
    const network = this.networks.getBySlug(input.chain)
    if (network.kind !== 'evm')
      throw invalidRequest(
        `chain: webhooks are available on EVM networks only (${input.chain} is ${network.kind})`,
      )
    const url = await this.checkUrl(input.url)
    const cfg = parseConfig(input.event_type, input.config)
    const secret = generateSigningSecret()
    const row = await store.insertWebhook(
      this.db,
      {
        id: `wh_${randomBytes(12).toString('hex')}`,
        account_id: owner.accountId,
        notify_email: owner.email,
        url,
        chain: network.slug,
        event_type: input.event_type,
        config: JSON.stringify(cfg),
        secret_enc: encryptSecret(secret, this.secretKey),
        status: 'active',
      },
      matchKeys(input.event_type, cfg),
    )
    return { ...view(row), signing_secret: secret }
  }

  async get(accountId: string, id: string): Promise<WebhookRow> {
    const row = await store.get(this.db, accountId, id)
    if (!row) throw notFound(`webhook ${id} not found`)
    return row
  }

  async list(accountId: string, q: { page: number; limit: number; status?: string }) {
    const { rows, total } = await store.list(this.db, accountId, q.status, q.limit, (q.page - 1) * q.limit)
    return {
      webhooks: rows.map((r) => ({
        id: r.id,
        url: r.url,
        chain: r.chain,
        event_type: r.event_type,
        status: r.status,
        created_at: r.created_at.toISOString(),
      })),
      page: q.page,
      total,
    }
  }

  async update(
    accountId: string,
    id: string,
    patch: { url?: string; status?: 'active' | 'paused'; config?: unknown },
  ) {
    const row = await this.get(accountId, id)
    if (row.status === 'disabled' && patch.status) {
      throw invalidRequest(
        `status: webhook ${id} is disabled (${row.status_reason ?? 'by the service'}); update its url to re-enable it`,
      )
    }
    const changes: Parameters<typeof store.update>[2] = {}
    let keys: ReturnType<typeof matchKeys> | undefined
    if (patch.url !== undefined) {
      changes.url = await this.checkUrl(patch.url)
      // A disabled webhook (its URL failed the safety checks) comes back with a new, valid URL.
      if (row.status === 'disabled') changes.status = 'active'
    }
    if (patch.config !== undefined) {
      const cfg = parseConfig(row.event_type as EventType, patch.config)
      changes.config = JSON.stringify(cfg)
      keys = matchKeys(row.event_type as EventType, cfg)
    }
    if (patch.status !== undefined) {
      changes.status = patch.status
      if (patch.status === 'active') {
        changes.status_reason = null
        changes.notified_at = null
      }
    }
    const updated = await store.update(this.db, id, changes, keys)
    if (!updated) throw notFound(`webhook ${id} not found`)
    if (updated.status === 'active') this.onNewWork()
    return {
      id: updated.id,
      url: updated.url,
      chain: updated.chain,
      event_type: updated.event_type,
      status: updated.status,
      updated_at: updated.updated_at.toISOString(),
    }
  }

  async delete(accountId: string, id: string) {
    if (!(await store.deleteWebhook(this.db, accountId, id))) throw notFound(`webhook ${id} not found`)
    return { id, deleted: true }
  }

  /** Queues a signed test event through the real delivery path (Svix/Stripe-style "send test"). */
  async sendTest(accountId: string, id: string) {
    const row = await this.get(accountId, id)
    const eventId = newEventId()
    const createdAt = new Date().toISOString()
    const body = {
      id: eventId,
      event_type: row.event_type,
      webhook_id: row.id,
      created_at: createdAt,
      test: true,
      data: sampleData(row.event_type as EventType, row.chain),
    }
    await store.insertEvents(this.db, [
      {
        id: eventId,
        webhook_id: row.id,
        network: null,
        block_number: null,
        event_type: row.event_type,
        body: JSON.stringify(body),
      },
    ])
    this.onNewWork()
    return { id: eventId, webhook_id: row.id, status: 'pending', queued: row.status === 'active' }
  }

  async redeliver(accountId: string, id: string, eventId: string) {
    await this.get(accountId, id)
    const ev = await store.event(this.db, id, eventId)
    if (!ev) throw notFound(`event ${eventId} not found for webhook ${id}`)
    if (ev.status === 'cancelled')
      throw invalidRequest(
        `event_id: ${eventId} was cancelled by a chain reorganisation and cannot be redelivered`,
      )
    await store.requeue(this.db, id, eventId)
    this.onNewWork()
    return { id: eventId, webhook_id: id, status: 'pending' }
  }

  async deliveries(accountId: string, id: string, q: { page: number; limit: number }) {
    await this.get(accountId, id)
    const { rows, total } = await store.attempts(this.db, id, q.limit, (q.page - 1) * q.limit)
    return {
      deliveries: rows.map((r) => ({
        event_id: r.event_id,
        attempt: r.attempt,
        status_code: r.status_code,
        error: r.error,
        duration_ms: r.duration_ms,
        created_at: r.created_at.toISOString(),
      })),
      page: q.page,
      total,
    }
  }

  /**
   * Retries exhausted: pause, mark the rest failed, and e-mail the account holder once. The
   * notice is written to the mail outbox in the pausing transaction (only by the call that moved
   * the webhook from active; a later PATCH to active re-arms it); the mailer sends it after.
   */
  async pauseAfterFailures(webhookId: string, lastError: string): Promise<void> {
    const paused = await store.pauseAfterFailures(
      this.db,
      webhookId,
      `delivery failed after all retries: ${lastError}`,
      (row) => (row.notify_email ? pauseNotice(row, lastError) : undefined),
    )
    if (!paused) return
    this.logger.warn({ webhook: webhookId }, 'webhook paused after repeated delivery failures')
    if (paused.mail) this.mailer.queued(paused.mail)
  }
}

function pauseNotice(row: WebhookRow, lastError: string): Mail {
  return {
    to: row.notify_email as string,
    subject: `Halyard webhook ${row.id} paused after failed deliveries`,
    text: [
      `Your webhook ${row.id} (${row.event_type} on ${row.chain}) could not deliver to ${row.url}.`,
      `The last attempt failed with: ${lastError}`,
      'The first attempt and every scheduled retry failed, so the webhook was paused and its undelivered events recorded as failed.',
      `Fix the receiver, then resume with PATCH /v1/webhooks/${row.id} {"status":"active"};`,
      `failed events can be sent again with POST /v1/webhooks/${row.id}/deliveries/{event_id}/redeliver.`,
    ].join('\n'),
  }
}

export function view(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    url: row.url,
    chain: row.chain,
    event_type: row.event_type,
    config: JSON.parse(row.config) as WebhookConfig,
    status: row.status,
    status_reason: row.status_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

function sampleData(type: EventType, chain: string): Record<string, unknown> {
  const zero = `0x${'0'.repeat(40)}`
  const tx = `0x${'0'.repeat(64)}`
  const base = { chain, block_number: 0, tx_hash: tx }
  switch (type) {
    case 'address_activity':
      return {
        ...base,
        from: zero,
        to: zero,
        value: '0',
        asset: 'ETH',
        contract: null,
        direction: 'incoming',
      }
    case 'token_transfer':
      return { ...base, contract: zero, from: zero, to: zero, value: '0', symbol: 'TEST', decimals: 18 }
    case 'nft_transfer':
      return { ...base, contract: zero, from: zero, to: zero, token_id: '0', standard: 'ERC721', quantity: 1 }
    case 'mined_transaction':
      return {
        ...base,
        block_hash: tx,
        transaction_index: 0,
        from: zero,
        to: zero,
        value: '0',
        status: 'success',
        gas_used: '0',
      }
    case 'log':
      return { ...base, block_hash: tx, log_index: 0, address: zero, topics: [], data: '0x' }
  }
}
