import { sql } from 'kysely'
import { Registry } from 'prom-client'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import type { AttemptOutcome, ClaimedEvent } from './event-store.ts'
import { registerWebhookMetrics } from './metrics.ts'
import * as store from './store.ts'

/** The sample value of `name{labels}` in a Prometheus text exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const claimed: ClaimedEvent = {
  seq: '1',
  id: 'evt_x',
  webhook_id: 'wh_q0',
  body: '{}',
  attempts: 1,
  round_attempts: 1,
  url: 'https://example.com/',
  secret_enc: 'x',
  account_id: 'acct',
  format: 'A',
  event_type: 'log',
}
const outcome = (over: Partial<AttemptOutcome>): AttemptOutcome => ({
  ev: claimed,
  statusCode: 200,
  error: null,
  durationMs: 40,
  next: 'delivered',
  ...over,
})

describeEachStorage('webhook delivery metrics on $name', (backend) => {
  let storage: TestStorage
  const errors: Error[] = []
  const registry = new Registry()
  let onOutcome: (o: AttemptOutcome) => void

  beforeAll(async () => {
    storage = await backend.open()
    await store.insertWebhook(
      storage.db,
      {
        id: 'wh_q0',
        account_id: 'acct',
        notify_email: null,
        url: 'https://example.com/',
        chain: 'ethereum-devnet',
        event_type: 'log',
        config: '{}',
        secret_enc: 'x',
        status: 'active',
      },
      [],
    )
    onOutcome = registerWebhookMetrics(registry, storage.db, (err) => errors.push(err))
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('reports the queue from the events table: due, scheduled, and how late the oldest due event is', async () => {
    let text = await registry.metrics()
    expect(sample(text, 'halyard_webhook_queue_events{state="due"}')).toBe(0)
    expect(sample(text, 'halyard_webhook_queue_lag_seconds')).toBe(0)

    const events = Array.from({ length: 6 }, (_, i) => ({
      id: `evt_q${i}`,
      webhook_id: 'wh_q0',
      network: 'ethereum-devnet',
      block_number: String(i),
      event_type: 'log',
      body: '{}',
    }))
    await store.insertEvents(storage.db, events)
    // evt_q0 delivered, evt_q1 failed (neither counts); q2–q3 due, the oldest 120 s late;
    // q4–q5 waiting for a retry an hour ahead.
    await sql`update webhook_events set status = 'delivered' where id = 'evt_q0'`.execute(storage.db)
    await sql`update webhook_events set status = 'failed' where id = 'evt_q1'`.execute(storage.db)
    await sql`update webhook_events set next_attempt_at = now() - interval '120 seconds' where id = 'evt_q2'`.execute(
      storage.db,
    )
    await sql`update webhook_events set status = 'sending', next_attempt_at = now() - interval '5 seconds' where id = 'evt_q3'`.execute(
      storage.db,
    )
    await sql`update webhook_events set next_attempt_at = now() + interval '1 hour' where id in ('evt_q4', 'evt_q5')`.execute(
      storage.db,
    )
    text = await registry.metrics()
    expect(sample(text, 'halyard_webhook_queue_events{state="due"}')).toBe(2)
    expect(sample(text, 'halyard_webhook_queue_events{state="scheduled"}')).toBe(2)
    const lag = sample(text, 'halyard_webhook_queue_lag_seconds') ?? -1
    expect(lag).toBeGreaterThanOrEqual(120)
    expect(lag).toBeLessThan(600)
    expect(errors).toEqual([])
  })

  it('counts recorded attempts by outcome and observes the duration of those that sent', async () => {
    onOutcome(outcome({ durationMs: 40 }))
    onOutcome(outcome({ durationMs: 40 }))
    onOutcome(outcome({ next: 'pending', statusCode: 500, durationMs: 3000, retryAt: new Date() }))
    onOutcome(outcome({ next: 'failed', statusCode: 410, durationMs: 20 }))
    onOutcome(outcome({ next: 'pending', statusCode: null, durationMs: 0, disable: 'resolves to 10.0.0.1' }))
    const text = await registry.metrics()
    expect(sample(text, 'halyard_webhook_attempts_total{outcome="delivered"}')).toBe(2)
    expect(sample(text, 'halyard_webhook_attempts_total{outcome="retry"}')).toBe(1)
    expect(sample(text, 'halyard_webhook_attempts_total{outcome="failed"}')).toBe(1)
    expect(sample(text, 'halyard_webhook_attempts_total{outcome="disabled"}')).toBe(1)
    expect(sample(text, 'halyard_webhook_attempt_duration_seconds_count{outcome="delivered"}')).toBe(2)
    expect(
      sample(text, 'halyard_webhook_attempt_duration_seconds_bucket{le="0.05",outcome="delivered"}'),
    ).toBe(2)
    expect(sample(text, 'halyard_webhook_attempt_duration_seconds_bucket{le="2.5",outcome="retry"}')).toBe(0)
    expect(sample(text, 'halyard_webhook_attempt_duration_seconds_count{outcome="disabled"}')).toBeUndefined()
  })

  it('keeps the last queue figures and says why when the database cannot be read', async () => {
    await storage.close()
    const text = await registry.metrics()
    expect(sample(text, 'halyard_webhook_queue_events{state="due"}')).toBe(2)
    expect(errors.length).toBeGreaterThan(0)
  })
})
