import { type Kysely, type Selectable, sql } from 'kysely'
import type { Viewer } from '../http/access.ts'
import { enqueueMail, type Mail } from '../mail/outbox.ts'
import { inList } from '../storage/filters.ts'
import type { Database } from '../storage/schema.ts'
import type { MatchKey } from './config.ts'
import type { WebhooksTable, WebhookTables } from './tables.ts'

// One module for the callers (`import * as store`), two files by job: the event queue is there.
export * from './event-store.ts'
export * from './quota-store.ts'

declare module '../storage/schema.ts' {
  interface Database extends WebhookTables {}
}

type Db = Kysely<Database>
export type WebhookRow = Selectable<WebhooksTable>

/* Webhooks and their match keys; the event queue's SQL is in event-store.ts. Every function takes
 * the database or the transaction it runs in. */

export async function insertWebhook(
  db: Db,
  row: Omit<
    WebhookRow,
    'created_at' | 'updated_at' | 'notified_at' | 'status_reason' | 'format' | 'event_types'
  > & {
    format?: string
    event_types?: string[]
  },
  keys: MatchKey[],
) {
  return db.transaction().execute(async (trx) => {
    const created = await trx.insertInto('webhooks').values(row).returningAll().executeTakeFirstOrThrow()
    await replaceKeys(trx, row.id, row.chain, keys)
    return created
  })
}

/** The webhook `id` if `viewer` sees it: its account's, on a network it may see. */
export function get(db: Db, viewer: Viewer, id: string): Promise<WebhookRow | undefined> {
  let q = db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', viewer.accountId)
  if (viewer.networks) q = q.where(inList('chain', viewer.networks))
  return q.executeTakeFirst()
}

export function getById(db: Db, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function list(
  db: Db,
  viewer: Viewer,
  status: string | undefined,
  limit: number,
  offset: number,
) {
  let q = db.selectFrom('webhooks').where('account_id', '=', viewer.accountId)
  if (viewer.networks) q = q.where(inList('chain', viewer.networks))
  if (status) q = q.where('status', '=', status)
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.n) }
}

export async function update(
  db: Db,
  id: string,
  patch: {
    url?: string
    status?: string
    config?: string
    status_reason?: string | null
    notified_at?: Date | null
    format?: string
    secret_enc?: string
    event_type?: string
    event_types?: string[]
  },
  keys?: MatchKey[],
): Promise<WebhookRow | undefined> {
  return db.transaction().execute(async (trx) => {
    // Undefined when a concurrent DELETE won: the caller answers 404, not 500.
    const row = await trx
      .updateTable('webhooks')
      .set({ ...patch, updated_at: new Date() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
    if (!row) return undefined
    if (keys) await replaceKeys(trx, id, row.chain, keys)
    return row
  })
}

export async function deleteWebhook(db: Db, viewer: Viewer, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    let q = trx.deleteFrom('webhooks').where('id', '=', id).where('account_id', '=', viewer.accountId)
    if (viewer.networks) q = q.where(inList('chain', viewer.networks))
    const gone = await q.executeTakeFirst()
    if (gone.numDeletedRows === 0n) return false
    await trx.deleteFrom('webhook_match_keys').where('webhook_id', '=', id).execute()
    // Undelivered events die with the webhook; history of delivered ones goes too.
    await trx.deleteFrom('webhook_events').where('webhook_id', '=', id).execute()
    await trx.deleteFrom('webhook_attempts').where('webhook_id', '=', id).execute()
    return true
  })
}

/**
 * Pauses a webhook whose retries are exhausted: its other undelivered events are recorded as
 * failed. Only the call that moves it from active gets the row back, and only that call writes
 * the notice `compose` makes to the mail outbox, in the same transaction: one e-mail per
 * pause, and a crash cannot separate the pause from its notice.
 */
export async function pauseAfterFailures(
  db: Db,
  webhookId: string,
  reason: string,
  compose: (row: WebhookRow) => Mail | undefined,
): Promise<{ row: WebhookRow; mail: Mail | undefined } | undefined> {
  return db.transaction().execute(async (trx) => {
    const moved = await leaveActive(trx, webhookId, 'paused', reason, compose)
    await trx
      .updateTable('webhook_events')
      .set({ status: 'failed', lease_until: null, last_error: sql`coalesce(last_error, 'webhook paused')` })
      .where('webhook_id', '=', webhookId)
      .where('status', 'in', ['pending', 'sending'])
      .execute()
    return moved
  })
}

/**
 * Moves a webhook from `active` to `status`. Only the call that moves it gets the row back, and
 * only that call writes the notice `compose` makes to the mail outbox, in the caller's
 * transaction: one e-mail per move, and a crash cannot separate the move from its notice.
 */
async function leaveActive(
  trx: Db,
  webhookId: string,
  status: 'paused' | 'disabled',
  reason: string,
  compose: (row: WebhookRow) => Mail | undefined,
): Promise<{ row: WebhookRow; mail: Mail | undefined } | undefined> {
  const moved = await trx
    .updateTable('webhooks')
    .set({ status, status_reason: reason, updated_at: new Date(), notified_at: new Date() })
    .where('id', '=', webhookId)
    .where('status', '=', 'active')
    .returningAll()
    .executeTakeFirst()
  if (!moved) return undefined
  const mail = compose(moved)
  if (mail) await enqueueMail(trx, mail)
  return { row: moved, mail }
}

/**
 * Candidate webhooks for a block: one lookup over every key the block touches, one row per
 * webhook with the keys it matched. The config is not in these rows, only the row version
 * (xmin: every UPDATE writes a new one): a webhook with 100 addresses has a ~4 KB config,
 * and sending it once per matched key cost megabytes per busy block (hashing it cost ~10 ms);
 * the matcher keeps parsed configs by version and asks `configs` for the misses.
 * The key lookup is materialised first so the planner cannot start from `webhooks` (without
 * fresh statistics it did, probing all 100,000 keys per webhook: 20 s instead of milliseconds).
 */
export async function candidates(db: Db, network: string, keys: string[]) {
  const result = await sql<{
    webhook_id: string
    event_type: string
    event_types: string[]
    version: string
    kinds: string[]
    keys: string[]
  }>`
    with hits as materialized (
      select k.webhook_id, k.kind, k.key
      from unnest(${[...keys, '*']}::text[]) as q(key)
      join webhook_match_keys k on k.network = ${network} and k.key = q.key
    )
    select w.id as webhook_id, w.event_type, w.event_types, w.xmin::text as version,
      array_agg(h.kind) as kinds, array_agg(h.key) as keys
    from hits h join webhooks w on w.id = h.webhook_id
    where w.status = 'active'
    group by w.id`.execute(db)
  return result.rows
}

/** Whether an active webhook on `network` reads block transactions (see matcher). */
export async function watchesTransactions(db: Db, network: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhooks')
    .select('id')
    .where('chain', '=', network)
    .where('status', '=', 'active')
    .where((eb) => {
      const watching = ['address_activity', 'mined_transaction', 'new_block', 'internal_transfer']
      return eb.or([
        eb('event_type', 'in', watching),
        sql<boolean>`event_types && ${sql.val(watching)}::text[]`,
      ])
    })
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Configs (with the same row version as `candidates`) of the given webhooks. */
export async function configs(db: Db, ids: readonly string[]) {
  if (ids.length === 0) return []
  const result = await sql<{
    id: string
    config: string
    version: string
    format: string
    account_id: string
  }>`
    select id, config, xmin::text as version, format, account_id from webhooks where id = any(${[...ids]}::text[])`.execute(
    db,
  )
  return result.rows
}

async function replaceKeys(trx: Db, webhookId: string, network: string, keys: MatchKey[]) {
  await trx.deleteFrom('webhook_match_keys').where('webhook_id', '=', webhookId).execute()
  for (let i = 0; i < keys.length; i += 1000) {
    await trx
      .insertInto('webhook_match_keys')
      .values(
        keys.slice(i, i + 1000).map((k) => ({ network, kind: k.kind, key: k.key, webhook_id: webhookId })),
      )
      .execute()
  }
}

/**
 * Disables a webhook whose URL stopped passing the safety checks at delivery time. Its events
 * stay queued (nothing was sent); the notice goes to the mail outbox in the same transaction,
 * once per move from active.
 */
export async function disable(
  db: Db,
  webhookId: string,
  reason: string,
  compose: (row: WebhookRow) => Mail | undefined,
): Promise<{ row: WebhookRow; mail: Mail | undefined } | undefined> {
  return db.transaction().execute((trx) => leaveActive(trx, webhookId, 'disabled', reason, compose))
}
