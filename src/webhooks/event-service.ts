import { invalidRequest, notFound } from '../errors.ts'
import type { Viewer } from '../http/access.ts'
import type { DB } from '../storage/database.ts'
import type { WebhookConfig } from './config.ts'
import * as history from './history-store.ts'
import { explainMatch } from './match-explain.ts'
import type { WebhookRow } from './store.ts'
import * as store from './store.ts'

export const EVENT_STATUSES = [
  'pending',
  'sending',
  'delivered',
  'failed',
  'cancelled',
  'over_quota',
] as const
export type EventStatus = (typeof EVENT_STATUSES)[number]

/** The longest time range one "redeliver failed events" covers. */
export const MAX_REDELIVER_DAYS = 31

export interface WebhookEventsDeps {
  db: DB
  /** The webhook if the viewer sees it, else a 404 (WebhookService.get: the one access decision). */
  owned: (viewer: Viewer, id: string) => Promise<WebhookRow>
  /** Requeued events: wakes the delivery workers. */
  onNewWork: () => void
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString())

/**
 * A webhook's event history, for the API and the dashboard alike: the events, one event with its
 * payload, its attempts (the first bytes of each answer) and the filters it satisfies, and the
 * redelivery of every failed event of a time range.
 */
export class WebhookEvents {
  constructor(private readonly deps: WebhookEventsDeps) {}

  async list(viewer: Viewer, id: string, q: { page: number; limit: number; status?: EventStatus }) {
    await this.deps.owned(viewer, id)
    const { rows, total } = await history.events(this.deps.db, id, q.status, q.limit, (q.page - 1) * q.limit)
    return { events: rows.map(summary), page: q.page, total }
  }

  async detail(viewer: Viewer, id: string, eventId: string) {
    const hook = await this.deps.owned(viewer, id)
    const ev = await store.event(this.deps.db, id, eventId)
    if (!ev) throw notFound(`event ${eventId} not found for webhook ${id}`)
    const attempts = await history.eventAttempts(this.deps.db, id, eventId)
    let payload: unknown
    try {
      payload = JSON.parse(ev.body)
    } catch {
      payload = ev.body
    }
    const match = explainMatch(JSON.parse(hook.config) as WebhookConfig, ev.event_type, payload)
    return {
      ...summary(ev),
      test: match.test,
      matched_by: match.reasons,
      payload,
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        status_code: a.status_code,
        error: a.error,
        response_body: a.response_body,
        duration_ms: a.duration_ms,
        created_at: a.created_at.toISOString(),
      })),
    }
  }

  /** Every failed event created in [from, to) goes back to the queue; how many did. */
  async redeliverFailed(viewer: Viewer, id: string, range: { from: Date; to: Date }) {
    await this.deps.owned(viewer, id)
    const { from, to } = range
    if (Number.isNaN(from.getTime())) throw invalidRequest('from: must be a date and time')
    if (Number.isNaN(to.getTime())) throw invalidRequest('to: must be a date and time')
    if (from >= to) throw invalidRequest('to: must be after from')
    if (to.getTime() - from.getTime() > MAX_REDELIVER_DAYS * 86_400_000)
      throw invalidRequest(`to: the range may span at most ${MAX_REDELIVER_DAYS} days`)
    const requeued = await history.requeueFailed(this.deps.db, id, from, to)
    if (requeued > 0) this.deps.onNewWork()
    return { webhook_id: id, requeued, from: from.toISOString(), to: to.toISOString() }
  }
}

function summary(ev: {
  id: string
  event_type: string
  status: string
  attempts: number
  last_error: string | null
  created_at: Date
  delivered_at: Date | null
  next_attempt_at: Date
}) {
  return {
    id: ev.id,
    event_type: ev.event_type,
    status: ev.status,
    attempts: ev.attempts,
    last_error: ev.last_error,
    created_at: ev.created_at.toISOString(),
    delivered_at: iso(ev.delivered_at),
    // A retry is due only while the event waits; its first try has no "next retry" yet.
    next_retry_at: ev.status === 'pending' && ev.attempts > 0 ? ev.next_attempt_at.toISOString() : null,
  }
}
