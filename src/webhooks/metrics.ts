import { sql } from 'kysely'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { DB } from '../storage/database.ts'
import type { AttemptOutcome } from './event-store.ts'

/** What an attempt came to, as the `outcome` label says it. */
export function attemptOutcome(o: AttemptOutcome): 'delivered' | 'retry' | 'failed' | 'disabled' {
  if (o.disable !== undefined) return 'disabled'
  if (o.next === 'delivered') return 'delivered'
  return o.next === 'pending' ? 'retry' : 'failed'
}

/** The queue as /metrics reports it: whole-database figures, read at scrape time. */
export interface QueueFigures {
  /** Undelivered events whose next attempt is due (waiting for a lane, or being sent). */
  due: number
  /** Undelivered events waiting for a retry time still ahead. */
  scheduled: number
  /** Seconds the longest-waiting due event is past its attempt time; 0 when none is due. */
  lagSeconds: number
}

/**
 * The delivery queue's figures from the events table: the partial index on undelivered events
 * (webhook_events_due) holds exactly the rows counted, so the scan is as long as the queue.
 */
export async function queueFigures(db: DB): Promise<QueueFigures> {
  const { rows } = await sql<{ due: string; scheduled: string; lag: string | null }>`
    select count(*) filter (where next_attempt_at <= now()) as due,
           count(*) filter (where next_attempt_at > now()) as scheduled,
           extract(epoch from now() - min(next_attempt_at)) as lag
    from webhook_events
    where status in ('pending', 'sending')`.execute(db)
  const r = rows[0]
  const lag = r?.lag === null || r?.lag === undefined ? 0 : Math.max(0, Number(r.lag))
  return { due: Number(r?.due ?? 0), scheduled: Number(r?.scheduled ?? 0), lagSeconds: lag }
}

/**
 * Webhook delivery on /metrics: attempts by outcome and their duration (this process's), and
 * the queue (the whole database's, so every instance reports the same value: the gauges
 * aggregate by max across cluster workers, and dashboards take max across instances).
 * Returns the hook the delivery worker calls with each recorded outcome.
 */
export function registerWebhookMetrics(
  registry: Registry,
  db: DB,
  onQueueError: (err: Error) => void,
): (o: AttemptOutcome) => void {
  const attempts = new Counter({
    name: 'halyard_webhook_attempts_total',
    help: 'Webhook delivery attempts recorded by this process, by outcome (delivered, retry, failed, disabled)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'halyard_webhook_attempt_duration_seconds',
    help: 'Time from sending a webhook delivery to its answer (or failure), by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  })
  // One query per scrape feeds both gauges: the registry collects them at the same time, so
  // the second joins the query the first started. A failed read keeps the last values rather
  // than claim an empty queue (the database watch reports the outage itself).
  let inFlight: Promise<QueueFigures | undefined> | undefined
  const figures = () => {
    inFlight ??= queueFigures(db)
      .catch((err: Error) => {
        onQueueError(err)
        return undefined
      })
      .finally(() => {
        inFlight = undefined
      })
    return inFlight
  }
  new Gauge({
    name: 'halyard_webhook_queue_events',
    help: 'Undelivered webhook events in the database: due (waiting for a lane or being sent) and scheduled (waiting for a retry time)',
    labelNames: ['state'] as const,
    aggregator: 'max',
    registers: [registry],
    async collect() {
      const f = await figures()
      if (!f) return
      this.set({ state: 'due' }, f.due)
      this.set({ state: 'scheduled' }, f.scheduled)
    },
  })
  new Gauge({
    name: 'halyard_webhook_queue_lag_seconds',
    help: 'Seconds the longest-waiting due webhook event is past its attempt time (0: nothing due)',
    aggregator: 'max',
    registers: [registry],
    async collect() {
      const f = await figures()
      if (f) this.set(f.lagSeconds)
    },
  })
  return (o) => {
    const outcome = attemptOutcome(o)
    attempts.inc({ outcome })
    // Attempts that sent nothing (the target refused before sending) have no duration to show.
    if (outcome !== 'disabled' && !o.operatorFault) duration.observe({ outcome }, o.durationMs / 1000)
  }
}
