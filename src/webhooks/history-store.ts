import type { Kysely } from 'kysely'
import type { Database } from '../storage/schema.ts'

type Db = Kysely<Database>

/** SQL of a webhook's event history (event-service.ts): lists, one event's attempts, bulk requeue. */

export async function events(
  db: Db,
  webhookId: string,
  status: string | undefined,
  limit: number,
  offset: number,
) {
  let q = db.selectFrom('webhook_events').where('webhook_id', '=', webhookId)
  if (status !== undefined) q = q.where('status', '=', status)
  const [rows, count] = await Promise.all([
    q
      .select([
        'id',
        'event_type',
        'status',
        'attempts',
        'last_error',
        'created_at',
        'delivered_at',
        'next_attempt_at',
      ])
      .orderBy('seq', 'desc')
      .limit(limit)
      .offset(offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.n) }
}

/** An event's attempts, oldest first (at most `limit`: retries are bounded by the schedule anyway). */
export function eventAttempts(db: Db, webhookId: string, eventId: string, limit = 200) {
  return db
    .selectFrom('webhook_attempts')
    .select(['attempt', 'status_code', 'error', 'response_body', 'duration_ms', 'created_at'])
    .where('event_id', '=', eventId)
    .where('webhook_id', '=', webhookId)
    .orderBy('id')
    .limit(limit)
    .execute()
}

/** Failed events created in [from, to) go back to the queue, as a redelivery of each would. */
export async function requeueFailed(db: Db, webhookId: string, from: Date, to: Date): Promise<number> {
  const res = await db
    .updateTable('webhook_events')
    .set({ status: 'pending', round_attempts: 0, next_attempt_at: new Date(), lease_until: null })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'failed')
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}
