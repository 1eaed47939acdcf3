import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { MatchKey } from './config.ts'

export interface WebhooksTable {
  id: string
  account_id: string
  url: string
  chain: string
  event_type: string
  config: string
  secret_enc: string
  status: string
  status_reason: string | null
  notified_at: Date | null
  created_at: Date
  updated_at: Date
}

export interface WebhookMatchKeysTable {
  network: string
  kind: string
  key: string
  webhook_id: string
}

export interface WebhookEventsTable {
  seq: string
  id: string
  webhook_id: string
  network: string | null
  block_number: string | null
  event_type: string
  body: string
  status: string
  attempts: number
  round_attempts: number
  next_attempt_at: Date
  lease_until: Date | null
  last_error: string | null
  created_at: Date
  delivered_at: Date | null
}

export interface WebhookAttemptsTable {
  id: string
  event_id: string
  webhook_id: string
  attempt: number
  status_code: number | null
  error: string | null
  duration_ms: number
  created_at: Date
}

export interface MailOutboxTable {
  id: string
  to_address: string
  subject: string
  body: string
  sent_at: Date | null
  error: string | null
  created_at: Date
}

export interface WebhookTables {
  webhooks: WebhooksTable
  webhook_match_keys: WebhookMatchKeysTable
  webhook_events: WebhookEventsTable
  webhook_attempts: WebhookAttemptsTable
  mail_outbox: MailOutboxTable
}

type Db = Kysely<Database>
export type WebhookRow = WebhooksTable

/** Events inserted by the matcher or the test endpoint. */
export interface NewEvent {
  id: string
  webhook_id: string
  network: string | null
  block_number: string | null
  event_type: string
  body: string
}

/** A claimed event, with what the sender needs from its webhook. */
export interface ClaimedEvent {
  seq: string
  id: string
  webhook_id: string
  body: string
  attempts: number
  round_attempts: number
  url: string
  secret_enc: string
  account_id: string
}

export class WebhookStore {
  constructor(readonly db: Db) {}

  async insertWebhook(row: Omit<WebhooksTable, 'created_at' | 'updated_at' | 'notified_at' | 'status_reason'>, keys: MatchKey[]) {
    return this.db.transaction().execute(async (trx) => {
      const created = await trx.insertInto('webhooks').values(row).returningAll().executeTakeFirstOrThrow()
      await replaceKeys(trx, row.id, row.chain, keys)
      return created
    })
  }

  get(accountId: string, id: string): Promise<WebhookRow | undefined> {
    return this.db.selectFrom('webhooks').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst()
  }

  getById(id: string): Promise<WebhookRow | undefined> {
    return this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async list(accountId: string, status: string | undefined, limit: number, offset: number) {
    let q = this.db.selectFrom('webhooks').where('account_id', '=', accountId)
    if (status) q = q.where('status', '=', status)
    const [rows, count] = await Promise.all([
      q.selectAll().orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute(),
      q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
    ])
    return { rows, total: Number(count.n) }
  }

  async update(
    id: string,
    patch: { url?: string; status?: string; config?: string; status_reason?: string | null; notified_at?: Date | null },
    keys?: MatchKey[],
  ): Promise<WebhookRow> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('webhooks')
        .set({ ...patch, updated_at: new Date() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow()
      if (keys) await replaceKeys(trx, id, row.chain, keys)
      return row
    })
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const gone = await trx.deleteFrom('webhooks').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst()
      if (gone.numDeletedRows === 0n) return false
      await trx.deleteFrom('webhook_match_keys').where('webhook_id', '=', id).execute()
      // Undelivered events die with the webhook; history of delivered ones goes too.
      await trx.deleteFrom('webhook_events').where('webhook_id', '=', id).execute()
      await trx.deleteFrom('webhook_attempts').where('webhook_id', '=', id).execute()
      return true
    })
  }

  async insertEvents(db: Db, events: NewEvent[]): Promise<void> {
    // Chunked: one statement per 500 events keeps parameter counts far below PostgreSQL's limit.
    for (let i = 0; i < events.length; i += 500) {
      await db
        .insertInto('webhook_events')
        .values(events.slice(i, i + 500).map((e) => ({ ...e, status: 'pending' })))
        .execute()
    }
  }

  /**
   * Claims up to `limit` due events, at most ONE per webhook and only a webhook's oldest
   * undelivered event (block order). Rows are locked with FOR UPDATE SKIP LOCKED so concurrent
   * workers or instances never claim the same event; the claimed rows move to `sending` with a
   * lease, and an expired lease (a crashed worker) makes them claimable again.
   */
  async claim(limit: number, leaseMs: number, excludeWebhooks: readonly string[]): Promise<ClaimedEvent[]> {
    const exclude = excludeWebhooks.length ? excludeWebhooks : ['']
    const result = await sql<ClaimedEvent>`
      with picked as (
        select e.seq from webhook_events e
        join webhooks w on w.id = e.webhook_id and w.status = 'active'
        where e.status in ('pending', 'sending')
          and ((e.status = 'pending' and e.next_attempt_at <= now())
               or (e.status = 'sending' and e.lease_until < now()))
          and e.webhook_id <> all(${exclude}::text[])
          and not exists (
            select 1 from webhook_events p
            where p.webhook_id = e.webhook_id and p.status in ('pending', 'sending') and p.seq < e.seq)
        order by e.next_attempt_at, e.seq
        limit ${limit}
        for update of e skip locked
      )
      update webhook_events ev
      set status = 'sending', lease_until = now() + ${`${leaseMs} milliseconds`}::interval
      from picked, webhooks w
      where ev.seq = picked.seq and w.id = ev.webhook_id
      returning ev.seq, ev.id, ev.webhook_id, ev.body, ev.attempts, ev.round_attempts, w.url, w.secret_enc, w.account_id`.execute(this.db)
    return result.rows
  }

  /** Records an attempt and moves the event on; returns false when the event was cancelled meanwhile. */
  async recordAttempt(
    ev: ClaimedEvent,
    outcome: { statusCode: number | null; error: string | null; durationMs: number },
    next: { status: 'delivered' | 'pending' | 'failed'; retryAt?: Date },
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_attempts')
        .values({
          event_id: ev.id,
          webhook_id: ev.webhook_id,
          attempt: ev.attempts + 1,
          status_code: outcome.statusCode,
          error: outcome.error,
          duration_ms: outcome.durationMs,
        })
        .execute()
      await trx
        .updateTable('webhook_events')
        .set({
          status: next.status,
          attempts: ev.attempts + 1,
          round_attempts: ev.round_attempts + 1,
          lease_until: null,
          last_error: outcome.error ?? (outcome.statusCode && next.status !== 'delivered' ? `HTTP ${outcome.statusCode}` : null),
          ...(next.retryAt ? { next_attempt_at: next.retryAt } : {}),
          ...(next.status === 'delivered' ? { delivered_at: new Date() } : {}),
        })
        .where('seq', '=', ev.seq)
        .where('status', '=', 'sending')
        .execute()
    })
  }

  /**
   * Pauses a webhook whose retries are exhausted: its other undelivered events are recorded as
   * failed. Returns true only for the call that moved it from active (one e-mail per pause).
   */
  async pauseAfterFailures(webhookId: string, reason: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('webhooks')
        .set({ status: 'paused', status_reason: reason, updated_at: new Date(), notified_at: new Date() })
        .where('id', '=', webhookId)
        .where('status', '=', 'active')
        .executeTakeFirst()
      await trx
        .updateTable('webhook_events')
        .set({ status: 'failed', lease_until: null, last_error: sql`coalesce(last_error, 'webhook paused')` })
        .where('webhook_id', '=', webhookId)
        .where('status', 'in', ['pending', 'sending'])
        .execute()
      return moved.numUpdatedRows > 0n
    })
  }

  /** Cancels undelivered events of blocks above `ancestor` (reorg), inside the indexer's transaction. */
  async cancelAbove(db: Db, network: string, ancestor: bigint): Promise<void> {
    await db
      .updateTable('webhook_events')
      .set({ status: 'cancelled', lease_until: null, last_error: 'block undone by a chain reorganisation' })
      .where('network', '=', network)
      .where('block_number', '>', ancestor.toString())
      .where('status', 'in', ['pending', 'sending'])
      .execute()
  }

  /** Candidate webhooks for a block: one indexed lookup over every key the block touches. */
  async candidates(db: Db, network: string, keys: string[]) {
    const result = await sql<{ webhook_id: string; kind: string; key: string; event_type: string; config: string }>`
      select k.webhook_id, k.kind, k.key, w.event_type, w.config
      from webhook_match_keys k join webhooks w on w.id = k.webhook_id
      where k.network = ${network} and k.key = any(${[...keys, '*']}::text[]) and w.status = 'active'`.execute(db)
    return result.rows
  }

  async event(webhookId: string, eventId: string) {
    return this.db
      .selectFrom('webhook_events')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .where('id', '=', eventId)
      .executeTakeFirst()
  }

  async requeue(webhookId: string, eventId: string): Promise<void> {
    await this.db
      .updateTable('webhook_events')
      .set({ status: 'pending', round_attempts: 0, next_attempt_at: new Date(), lease_until: null })
      .where('webhook_id', '=', webhookId)
      .where('id', '=', eventId)
      .execute()
  }

  async attempts(webhookId: string, limit: number, offset: number) {
    const q = this.db.selectFrom('webhook_attempts').where('webhook_id', '=', webhookId)
    const [rows, count] = await Promise.all([
      q.selectAll().orderBy('id').limit(limit).offset(offset).execute(),
      q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
    ])
    return { rows, total: Number(count.n) }
  }
}

async function replaceKeys(trx: Db, webhookId: string, network: string, keys: MatchKey[]) {
  await trx.deleteFrom('webhook_match_keys').where('webhook_id', '=', webhookId).execute()
  for (let i = 0; i < keys.length; i += 1000) {
    await trx
      .insertInto('webhook_match_keys')
      .values(keys.slice(i, i + 1000).map((k) => ({ network, kind: k.kind, key: k.key, webhook_id: webhookId })))
      .execute()
  }
}
