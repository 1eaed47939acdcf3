import { randomBytes } from 'node:crypto'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Viewer } from '../http/access.ts'
import type { Logger } from '../logger.ts'
import type { Mailer } from '../mail/sender.ts'
import type { DB } from '../storage/database.ts'
import {
  type EventType,
  matchKeysForTypes,
  parseConfigForTypes,
  typesOf,
  type WebhookConfig,
} from './config.ts'
import { encryptSecret, generateSigningSecret } from './crypto.ts'
import { WebhookEvents } from './event-service.ts'
import type { DeliveryFormat } from './form-b.ts'
import { newEventId } from './matcher.ts'
import { disableNotice, pauseNotice } from './notices.ts'
import { DEFAULT_LIMITS, limitFor, type WebhookLimits, webhookCapError } from './quota.ts'
import { testEventBody } from './samples.ts'
import type { WebhookRow } from './store.ts'
import * as store from './store.ts'
import type { TraceReader } from './traces.ts'
import { checkWebhookUrl, type UrlPolicy } from './url-policy.ts'

export interface WebhookView {
  id: string
  url: string
  chain: string
  event_type: string
  /** Every type monitored (`event_type` is the first). */
  event_types: EventType[]
  config: WebhookConfig
  /** Delivery form: 'A' (the default) or 'B' (docs/webhooks.md). */
  format: string
  status: string
  status_reason: string | null
  created_at: string
  updated_at: string
}

/**
 * `event_type` (one type) or `event_types` (one or more; the first is shown as `event_type`):
 * exactly one of the two. Both is a 400 rather than a silent winner.
 */
function chosenTypes(input: { event_type?: EventType; event_types?: EventType[] }): EventType[] | undefined {
  if (input.event_type !== undefined && input.event_types !== undefined)
    throw invalidRequest('event_types: give event_type or event_types, not both')
  if (input.event_types !== undefined) return input.event_types
  return input.event_type === undefined ? undefined : [input.event_type]
}

/** Who creates a webhook: its account, and the e-mail a pause notice goes to. */
export interface WebhookOwner {
  accountId: string
  email: string
  /** The account's plan (the webhook-count cap); the free plan's cap when absent. */
  plan?: string
}

export interface WebhookServiceDeps {
  db: DB
  networks: NetworkRegistry
  /** 32-byte key the signing secrets are encrypted with at rest. */
  secretKey: Buffer
  urlPolicy: UrlPolicy
  mailer: Mailer
  logger: Logger
  /** New events to deliver (a test send, a redelivery, a resumed webhook): wakes the delivery workers. */
  onNewWork: () => void
  /** DEFAULT_LIMITS when absent. */
  limits?: WebhookLimits
  traces?: TraceReader
}

/** Webhook subscriptions: validation, secrets, state transitions. */
export class WebhookService {
  private readonly db: DB
  private readonly limits: WebhookLimits
  /** The event history (lists, payloads, attempts, bulk redelivery), behind the same `get`. */
  readonly events: WebhookEvents

  constructor(private readonly deps: WebhookServiceDeps) {
    this.db = deps.db
    this.limits = deps.limits ?? DEFAULT_LIMITS
    this.events = new WebhookEvents({
      db: deps.db,
      owned: (v, id) => this.get(v, id),
      onNewWork: deps.onNewWork,
    })
  }

  checkUrl(raw: string): Promise<string> {
    return checkWebhookUrl(raw, this.deps.urlPolicy)
  }

  async create(
    owner: WebhookOwner,
    input: {
      url: string
      chain: string
      event_type?: EventType
      event_types?: EventType[]
      config?: unknown
      format?: DeliveryFormat
    },
  ) {
    const types = chosenTypes(input)
    if (types === undefined) throw invalidRequest('event_type: is required (or event_types, a list)')
    const network = this.deps.networks.getBySlug(input.chain)
    if (network.kind !== 'evm')
      throw invalidRequest(
        `chain: webhooks are available on EVM networks only (${input.chain} is ${network.kind})`,
      )
    const url = await this.checkUrl(input.url)
    const cfg = parseConfigForTypes(types, input.config)
    if (types.includes('internal_transfer') && !(await this.deps.traces?.supported(network.slug)))
      throw invalidRequest(
        `${input.event_types ? 'event_types' : 'event_type'}: internal_transfer needs call traces, and the node of ${network.slug} answers neither debug_traceBlockByNumber (callTracer) nor trace_block`,
      )
    const plan = owner.plan ?? (await store.accountPlan(this.db, owner.accountId))
    const cap = limitFor(this.limits.webhooksPerAccount, plan)
    // Checked before the insert: two creates racing at the cap may both pass (one over, once).
    if (cap !== null && (await store.countWebhooks(this.db, owner.accountId)) >= cap)
      throw webhookCapError(plan, cap)
    const secret = generateSigningSecret()
    const row = await store.insertWebhook(
      this.db,
      {
        id: `wh_${randomBytes(12).toString('hex')}`,
        account_id: owner.accountId,
        notify_email: owner.email,
        url,
        chain: network.slug,
        event_type: types[0] as EventType,
        event_types: types,
        config: JSON.stringify(cfg),
        secret_enc: encryptSecret(secret, this.deps.secretKey),
        status: 'active',
        format: input.format ?? 'A',
      },
      matchKeysForTypes(types, cfg),
    )
    return { ...view(row), signing_secret: secret }
  }

  /** The webhook if `viewer` sees it; another account's, or a mainnet one for a test key, is a 404. */
  async get(viewer: Viewer, id: string): Promise<WebhookRow> {
    const row = await store.get(this.db, viewer, id)
    if (!row) throw notFound(`webhook ${id} not found`)
    return row
  }

  async list(viewer: Viewer, q: { page: number; limit: number; status?: string }) {
    const { rows, total } = await store.list(this.db, viewer, q.status, q.limit, (q.page - 1) * q.limit)
    return {
      webhooks: rows.map((r) => ({
        id: r.id,
        url: r.url,
        chain: r.chain,
        event_type: r.event_type,
        event_types: typesOf(r),
        status: r.status,
        created_at: r.created_at.toISOString(),
      })),
      page: q.page,
      total,
    }
  }

  async update(
    viewer: Viewer,
    id: string,
    patch: {
      url?: string
      status?: 'active' | 'paused'
      config?: unknown
      format?: DeliveryFormat
      event_type?: EventType
      event_types?: EventType[]
    },
  ) {
    const row = await this.get(viewer, id)
    const newTypes = chosenTypes(patch)
    if (row.status === 'disabled' && patch.status) {
      throw invalidRequest(
        `status: webhook ${id} is disabled (${row.status_reason ?? 'by the service'}); update its url to re-enable it`,
      )
    }
    const changes: Parameters<typeof store.update>[2] = {}
    let keys: ReturnType<typeof matchKeysForTypes> | undefined
    if (patch.url !== undefined) {
      changes.url = await this.checkUrl(patch.url)
      // A disabled webhook (its URL failed the safety checks) comes back with a new, valid URL.
      if (row.status === 'disabled') {
        changes.status = 'active'
        changes.status_reason = null
        changes.notified_at = null
      }
    }
    if (patch.config !== undefined || newTypes !== undefined) {
      // New types are checked against the config they will read: the new one, else the stored one.
      const types = newTypes ?? typesOf(row)
      const cfg = parseConfigForTypes(types, patch.config ?? JSON.parse(row.config))
      if (newTypes?.includes('internal_transfer') && !(await this.deps.traces?.supported(row.chain)))
        throw invalidRequest(
          `event_types: internal_transfer needs call traces, and the node of ${row.chain} answers neither debug_traceBlockByNumber (callTracer) nor trace_block`,
        )
      changes.config = JSON.stringify(cfg)
      keys = matchKeysForTypes(types, cfg)
      if (newTypes !== undefined) {
        changes.event_type = newTypes[0] as EventType
        changes.event_types = newTypes
      }
    }
    // Takes effect for events created from now on: a queued event keeps the body it was built with.
    if (patch.format !== undefined) changes.format = patch.format
    if (patch.status !== undefined) {
      changes.status = patch.status
      if (patch.status === 'active') {
        changes.status_reason = null
        changes.notified_at = null
      }
    }
    const updated = await store.update(this.db, id, changes, keys)
    if (!updated) throw notFound(`webhook ${id} not found`)
    if (updated.status === 'active') this.deps.onNewWork()
    return {
      id: updated.id,
      url: updated.url,
      chain: updated.chain,
      event_type: updated.event_type,
      event_types: typesOf(updated),
      status: updated.status,
      updated_at: updated.updated_at.toISOString(),
    }
  }

  async delete(viewer: Viewer, id: string) {
    if (!(await store.deleteWebhook(this.db, viewer, id))) throw notFound(`webhook ${id} not found`)
    return { id, deleted: true }
  }

  /** Queues a signed test event through the real delivery path (Svix/Stripe-style "send test"). */
  async sendTest(viewer: Viewer, id: string) {
    const row = await this.get(viewer, id)
    const eventId = newEventId()
    const createdAt = new Date().toISOString()
    const body = testEventBody(row, eventId, createdAt, this.chainIdOf(row.chain))
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
    this.deps.onNewWork()
    return { id: eventId, webhook_id: row.id, status: 'pending', queued: row.status === 'active' }
  }

  /**
   * Rotation: a new signing secret, returned once. No overlap window: every attempt from the
   * commit on (retries of older events included) is signed with the new secret only, because
   * both forms carry exactly one signature and a receiver comparing the header would reject a
   * second one. A lane already claimed at that moment may still go out under the old secret.
   */
  async rotateSecret(viewer: Viewer, id: string) {
    await this.get(viewer, id)
    const secret = generateSigningSecret()
    const updated = await store.update(this.db, id, {
      secret_enc: encryptSecret(secret, this.deps.secretKey),
    })
    if (!updated) throw notFound(`webhook ${id} not found`)
    return { id, signing_secret: secret, updated_at: updated.updated_at.toISOString() }
  }

  private chainIdOf(slug: string): number {
    return this.deps.networks.all().find((n) => n.slug === slug)?.chainId ?? 0
  }

  async redeliver(viewer: Viewer, id: string, eventId: string) {
    await this.get(viewer, id)
    const ev = await store.event(this.db, id, eventId)
    if (!ev) throw notFound(`event ${eventId} not found for webhook ${id}`)
    if (ev.status === 'cancelled')
      throw invalidRequest(
        `event_id: ${eventId} was cancelled by a chain reorganisation and cannot be redelivered`,
      )
    await store.requeue(this.db, id, eventId)
    this.deps.onNewWork()
    return { id: eventId, webhook_id: id, status: 'pending' }
  }

  async deliveries(viewer: Viewer, id: string, q: { page: number; limit: number }) {
    await this.get(viewer, id)
    const { rows, total } = await store.attempts(this.db, id, q.limit, (q.page - 1) * q.limit)
    return {
      deliveries: rows.map((r) => ({
        event_id: r.event_id,
        attempt: r.attempt,
        status_code: r.status_code,
        error: r.error,
        duration_ms: r.duration_ms,
        // Not `instance`: the process that made the attempt (hostname:pid by default) is the
        // operator's to know (the webhook_attempts table, logs), not the tenant's.
        created_at: r.created_at.toISOString(),
      })),
      page: q.page,
      total,
    }
  }

  /**
   * For GET /ready: an undelivered event whose last try found its signing secret undecryptable
   * (HALYARD_SECRET_KEY changed) is an operator problem; the customer's webhook is not paused.
   */
  readinessChecks(): Array<{ name: string; check(): Promise<void> }> {
    return [
      {
        name: 'webhook signing secrets',
        check: async () => {
          const n = await store.undecryptableBacklog(this.db)
          if (n > 0)
            throw new Error(
              `${n} webhook event(s) wait because their signing secret does not decrypt with this HALYARD_SECRET_KEY (restore the key)`,
            )
        },
      },
    ]
  }

  /** The URL failed the safety checks at delivery: disabled, with the reason on read and an e-mail. */
  async disable(webhookId: string, reason: string): Promise<void> {
    const done = await store.disable(this.db, webhookId, `url refused at delivery: ${reason}`, (row) =>
      row.notify_email ? disableNotice(row, reason) : undefined,
    )
    if (!done) return
    this.deps.logger.warn(
      { webhook: webhookId, reason },
      'webhook disabled: its URL no longer passes the safety checks',
    )
    if (done.mail) this.deps.mailer.queued(done.mail)
  }

  /**
   * Retries exhausted: pause, mark the rest failed, and e-mail the account holder once (written
   * to the mail outbox in the pausing transaction, only by the call that moved the webhook from
   * active; a later PATCH to active re-arms it); the mailer sends it after.
   */
  async pauseAfterFailures(webhookId: string, lastError: string): Promise<void> {
    const paused = await store.pauseAfterFailures(
      this.db,
      webhookId,
      `delivery failed after all retries: ${lastError}`,
      (row) => (row.notify_email ? pauseNotice(row, lastError) : undefined),
    )
    if (!paused) return
    this.deps.logger.warn({ webhook: webhookId }, 'webhook paused after repeated delivery failures')
    if (paused.mail) this.deps.mailer.queued(paused.mail)
  }
}

export function view(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    url: row.url,
    chain: row.chain,
    event_type: row.event_type,
    event_types: typesOf(row),
    config: JSON.parse(row.config) as WebhookConfig,
    format: row.format,
    status: row.status,
    status_reason: row.status_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}
