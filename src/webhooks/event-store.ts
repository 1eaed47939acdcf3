import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { WebhookEventsTable } from './tables.ts'

type Db = Kysely<Database>

/** Events inserted by the matcher or the test endpoint. */
export type NewEvent = Pick<
  WebhookEventsTable,
  'id' | 'webhook_id' | 'network' | 'block_number' | 'event_type' | 'body'
>

/** What one delivery attempt came to, and where its event goes next. */
export interface AttemptOutcome {
  ev: ClaimedEvent
  statusCode: number | null
  error: string | null
  durationMs: number
  /** The first bytes of the receiver's answer, as text (RESPONSE_SNIPPET_BYTES); absent: none. */
  responseBody?: string | null
  next: 'delivered' | 'pending' | 'failed'
  retryAt?: Date
  /**
   * The attempt failed on our side before anything was sent (the signing secret does not
   * decrypt: HALYARD_SECRET_KEY changed). Recorded in the history, retried with backoff, but it
   * does not count towards pausing the webhook: the receiver did nothing wrong.
   */
  operatorFault?: boolean
  /**
   * The target no longer passes the safety checks (resolves to a refused address, or its
   * scheme is no longer allowed): nothing was sent, the webhook becomes `disabled` with this
   * reason, and the event waits (not counted as a retry) until a PATCH with a good URL.
   */
  disable?: string
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
  /** The webhook's delivery form ('A' or 'B') and the event's type (form B headers). */
  format: string
  event_type: string
}

/* The durable event queue: events go in with the indexed block (optionally leased to this
 * process's worker), are claimed in lanes with FOR UPDATE SKIP LOCKED, and move on with each
 * attempt's recorded outcome. Cancelled by a reorg, re-queued on request. */

/**
 * Inserts events in order. With `lease`, an event whose flag is set goes in already claimed
 * (`sending`, leased) when its webhook is active and has nothing else undelivered: those
 * come back, and the caller hands them to this process's worker once the transaction
 * commits, so the first delivery needs no claim query (a claim probes every active
 * webhook's head: tens of milliseconds per block, on the path from block to delivery).
 * Another instance cannot take them meanwhile: they are invisible until the commit and
 * leased after it; a crash before they are sent lets the lease run out, as with any claim.
 */
export async function insertEvents(
  db: Db,
  events: readonly NewEvent[],
  lease?: { flags: readonly boolean[]; leaseMs: number },
  /** Events past the account's daily quota (quota.ts): written `over_quota` with this reason. */
  overQuota?: ReadonlyMap<string, string>,
): Promise<ClaimedEvent[]> {
  const leased: ClaimedEvent[] = []
  // One JSON document per 5,000 events: JSON.stringify and the server's JSON parser cost
  // about two thirds of what escaping and parsing six text[] arrays of bodies did, and this
  // runs inside the indexer's transaction, on the path from block to first delivery.
  for (let i = 0; i < events.length; i += 5000) {
    const part = events.slice(i, i + 5000)
    const rows = part.map((e, k) => {
      const over = overQuota?.get(e.id)
      return { ...e, lease: over === undefined && lease?.flags[i + k] === true, over: over ?? null }
    })
    const result = await sql<
      Pick<
        ClaimedEvent,
        'seq' | 'id' | 'webhook_id' | 'url' | 'secret_enc' | 'account_id' | 'format' | 'event_type'
      >
    >`
      with ins as (
        insert into webhook_events (id, webhook_id, network, block_number, event_type, body, status, lease_until, last_error)
        select v.id, v.webhook_id, v.network, v.block_number, v.event_type, v.body,
          case when v.over is not null then 'over_quota' when l.leased then 'sending' else 'pending' end,
          case when l.leased then clock_timestamp() + ${`${lease?.leaseMs ?? 0} milliseconds`}::interval end,
          v.over
        from rows from (json_to_recordset(${JSON.stringify(rows)}::json) as (
          id text, webhook_id text, network text, block_number bigint, event_type text, body text, lease boolean, over text
        )) with ordinality as v(id, webhook_id, network, block_number, event_type, body, lease, over, n)
        cross join lateral (
          select case when v.lease then
            exists (select 1 from webhooks w where w.id = v.webhook_id and w.status = 'active')
            and not exists (
              select 1 from webhook_events e
              where e.webhook_id = v.webhook_id and e.status in ('pending', 'sending'))
          else false end as leased
        ) l
        order by v.n
        returning seq, id, webhook_id, status, event_type
      )
      select ins.seq, ins.id, ins.webhook_id, w.url, w.secret_enc, w.account_id, w.format, ins.event_type
      from ins join webhooks w on w.id = ins.webhook_id
      where ins.status = 'sending'`.execute(db)
    if (result.rows.length === 0) continue
    const bodies = new Map(part.map((e) => [e.id, e.body]))
    for (const r of result.rows) {
      leased.push({ ...r, body: bodies.get(r.id) as string, attempts: 0, round_attempts: 0 })
    }
  }
  return leased.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1))
}

/**
 * Claims up to `lanes` webhooks whose oldest undelivered event is due, and for each of them
 * its oldest `perLane` undelivered events (a lane, sent one after another in block order).
 * Rows are locked with FOR UPDATE SKIP LOCKED so concurrent workers or instances never claim
 * the same event; claimed rows move to `sending` with a lease, and an expired lease (a
 * crashed worker) makes them claimable again. The webhook rows are locked too (SKIP LOCKED,
 * for the statement only), so racing claims pick different webhooks instead of colliding
 * on the same heads. One index probe per active webhook finds its
 * head (webhook_events_queue); claiming lanes keeps the number of claims far below the
 * number of deliveries.
 */
export async function claim(
  db: Db,
  lanes: number,
  perLane: number,
  leaseMs: number,
  excludeWebhooks: readonly string[],
): Promise<ClaimedEvent[]> {
  const exclude = excludeWebhooks.length ? excludeWebhooks : ['']
  const result = await sql<ClaimedEvent>`
    with heads as (
      select w.id as webhook_id from webhooks w
      cross join lateral (
        select e.seq, e.status, e.next_attempt_at, e.lease_until from webhook_events e
        where e.webhook_id = w.id and e.status in ('pending', 'sending')
        order by e.seq limit 1
      ) h
      where w.status = 'active'
        and w.id <> all(${exclude}::text[])
        and ((h.status = 'pending' and h.next_attempt_at <= now())
             or (h.status = 'sending' and h.lease_until < now()))
      order by h.next_attempt_at, h.seq
      limit ${lanes}
      for update of w skip locked
    ),
    picked as (
      select e.seq from heads
      cross join lateral (
        select q.seq from webhook_events q
        where q.webhook_id = heads.webhook_id and q.status in ('pending', 'sending')
        order by q.seq limit ${perLane}
      ) l
      join webhook_events e on e.seq = l.seq
      where e.status = 'pending' or (e.status = 'sending' and e.lease_until < now())
      for update of e skip locked
    )
    update webhook_events ev
    set status = 'sending', lease_until = now() + ${`${leaseMs} milliseconds`}::interval
    from picked, webhooks w
    where ev.seq = picked.seq and w.id = ev.webhook_id
    returning ev.seq, ev.id, ev.webhook_id, ev.body, ev.attempts, ev.round_attempts, w.url, w.secret_enc,
      w.account_id, w.format, ev.event_type`.execute(db)
  // UPDATE … RETURNING has no order: lanes go out in seq (block) order.
  return result.rows.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1))
}

/**
 * Extends the lease of events this worker still holds (claimed, waiting, in flight, or sent
 * and not yet recorded): a live worker keeps its events, a dead one stops renewing and its
 * events come back within one short lease (docs/dependency-failures.md).
 */
export async function renew(db: Db, seqs: readonly string[], leaseMs: number): Promise<void> {
  if (seqs.length === 0) return
  await sql`
    update webhook_events set lease_until = now() + ${`${leaseMs} milliseconds`}::interval
    where seq = any(${[...seqs]}::bigint[]) and status = 'sending'`.execute(db)
}

/** Gives back claimed events that were not attempted (the lane stopped at a failure). */
export async function release(db: Db, seqs: readonly string[]): Promise<void> {
  if (seqs.length === 0) return
  await db
    .updateTable('webhook_events')
    .set({ status: 'pending', lease_until: null })
    .where('seq', 'in', [...seqs])
    .where('status', '=', 'sending')
    .execute()
}

/**
 * Records finished attempts and moves their events on, many at once: one transaction with one
 * insert and one UPDATE, both over unnest'ed arrays. Batching is what lets one worker record
 * thousands of deliveries per second. An event no longer `sending` (cancelled by a reorg, or
 * its webhook deleted meanwhile) keeps its state; the attempt is still logged.
 */
export async function recordOutcomes(
  db: Db,
  items: readonly AttemptOutcome[],
  /** The instance that made the attempts (the delivery history shows it). */
  instance: string | null = null,
): Promise<void> {
  if (items.length === 0) return
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < items.length; i += 2000) {
      const chunk = items.slice(i, i + 2000)
      await sql`
        insert into webhook_attempts (event_id, webhook_id, attempt, status_code, error, duration_ms, response_body, instance)
        select *, ${instance}::text from unnest(
          ${chunk.map((o) => o.ev.id)}::text[],
          ${chunk.map((o) => o.ev.webhook_id)}::text[],
          ${chunk.map((o) => o.ev.attempts + 1)}::integer[],
          ${chunk.map((o) => o.statusCode)}::integer[],
          ${chunk.map((o) => storableError(o.error))}::text[],
          ${chunk.map((o) => o.durationMs)}::integer[],
          ${chunk.map((o) => storableError(o.responseBody ?? null))}::text[])`.execute(trx)
      const seqs = chunk.map((o) => o.ev.seq)
      const statuses = chunk.map((o) => o.next)
      const errors = chunk.map((o) =>
        o.next === 'delivered'
          ? null
          : storableError(o.error ?? (o.statusCode === null ? null : `HTTP ${o.statusCode}`)),
      )
      const retries = chunk.map((o) => o.retryAt?.toISOString() ?? null)
      // `e.seq = any(…)` gives the planner an index condition: without fresh statistics a
      // join on the VALUES alone was planned as a nested loop over a seq scan (~1 s per batch).
      await sql`
        update webhook_events e
        set status = v.status,
            attempts = e.attempts + 1,
            round_attempts = e.round_attempts + case when v.counts then 1 else 0 end,
            lease_until = null,
            last_error = v.last_error,
            next_attempt_at = coalesce(v.retry_at, e.next_attempt_at),
            delivered_at = case when v.status = 'delivered' then now() else e.delivered_at end
        from unnest(${seqs}::bigint[], ${statuses}::text[], ${errors}::text[], ${retries}::timestamptz[],
            ${chunk.map((o) => !o.operatorFault && o.disable === undefined)}::boolean[])
          as v(seq, status, last_error, retry_at, counts)
        where e.seq = any(${seqs}::bigint[]) and e.seq = v.seq and e.status = 'sending'`.execute(trx)
    }
  })
}

/**
 * An attempt's error as PostgreSQL text can hold it: NUL bytes (which `text` refuses, failing
 * the whole batch — and a batch that never records leaves its delivered events `sending`, to
 * be sent again at every lease expiry) become U+FFFD, and the length is capped.
 */
export function storableError(error: string | null): string | null {
  if (error === null) return null
  const clean = error.includes('\u0000') ? error.replaceAll('\u0000', '\ufffd') : error
  return clean.length > 2000 ? `${clean.slice(0, 2000)}…` : clean
}

/** Cancels undelivered events of blocks above `ancestor` (reorg), inside the indexer's transaction. */
export async function cancelAbove(db: Db, network: string, ancestor: bigint): Promise<void> {
  await db
    .updateTable('webhook_events')
    .set({ status: 'cancelled', lease_until: null, last_error: 'block undone by a chain reorganisation' })
    .where('network', '=', network)
    .where('block_number', '>', ancestor.toString())
    .where('status', 'in', ['pending', 'sending'])
    .execute()
}

export async function event(db: Db, webhookId: string, eventId: string) {
  return db
    .selectFrom('webhook_events')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('id', '=', eventId)
    .executeTakeFirst()
}

export async function requeue(db: Db, webhookId: string, eventId: string): Promise<void> {
  // An event in flight is left alone: dropping its lease would let a second worker claim and
  // send it while the first is still sending (two at once for one webhook, out of order).
  await db
    .updateTable('webhook_events')
    .set({ status: 'pending', round_attempts: 0, next_attempt_at: new Date(), lease_until: null })
    .where('webhook_id', '=', webhookId)
    .where('id', '=', eventId)
    .where('status', '<>', 'sending')
    .execute()
}

export async function attempts(db: Db, webhookId: string, limit: number, offset: number) {
  const q = db.selectFrom('webhook_attempts').where('webhook_id', '=', webhookId)
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.n) }
}
