import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { visibleTo } from '../http/access.ts'
import { pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import { EVENT_STATUSES, MAX_REDELIVER_DAYS } from './event-service.ts'
import { deliveryAttempt, eventId, timestamp, webhookId } from './routes.ts'
import type { WebhookService } from './service.ts'

/**
 * A webhook's event history (docs/webhooks.md): its events, one event with its payload, its
 * attempts and the filters it satisfies, and the redelivery of every failed event of a time
 * range. Wire shapes only; the logic is event-service.ts, which the dashboard calls as well.
 */

const eventSummary = z.object({
  id: z.string().describe('The event id (evt_…)').meta({ example: 'evt_0123456789abcdef01234567' }),
  event_type: z
    .string()
    .describe('What happened (address_activity, token_transfer, …)')
    .meta({ example: 'token_transfer' }),
  status: z.enum(EVENT_STATUSES).describe('Where the event is in its delivery'),
  attempts: z.number().int().describe('Delivery attempts so far').meta({ example: 1 }),
  last_error: z
    .string()
    .nullable()
    .describe('Why the last attempt failed; null if none did')
    .meta({ example: null }),
  created_at: timestamp.describe('When the event was matched (ISO 8601, UTC)'),
  delivered_at: timestamp.nullable().describe('When the receiver accepted it; null until then'),
  next_retry_at: timestamp
    .nullable()
    .describe('when the next retry is due (pending events that failed once)'),
})
const eventList = z.object({
  events: z.array(eventSummary).describe('Newest first'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('Events in all pages').meta({ example: 42 }),
})
const eventDetail = eventSummary.extend({
  test: z.boolean().describe('a test event (POST /v1/webhooks/{id}/test)').meta({ example: false }),
  matched_by: z
    .array(z.string())
    .describe("the webhook's filters the event satisfies, each as `filter: why`")
    .meta({ example: ['addresses: 0xd8da6bf26964af9d7eed9e03e53415d37aa96045 is the sender (from)'] }),
  payload: z.unknown().describe('the body delivered (signed as sent)'),
  attempts: z
    .array(
      deliveryAttempt.extend({
        response_body: z
          .string()
          .nullable()
          .describe("the first 512 bytes of the receiver's answer")
          .meta({ example: 'ok' }),
      }),
    )
    .describe('Every delivery attempt, first first'),
})
const dateTime = (name: string) =>
  z.iso.datetime({ offset: true, error: `${name}: must be an ISO 8601 date and time (2026-11-26T10:00:00Z)` })
const redeliverBody = z.strictObject({
  from: dateTime('from')
    .describe('failed events created at or after this time')
    .meta({ example: '2026-11-26T00:00:00Z' }),
  to: dateTime('to')
    .describe(`failed events created before this time (at most ${MAX_REDELIVER_DAYS} days after from)`)
    .meta({ example: '2026-11-27T00:00:00Z' }),
})
const requeued = z.object({
  webhook_id: z.string().describe('The webhook').meta({ example: 'wh_0123456789abcdef01234567' }),
  requeued: z.number().int().describe('Failed events queued again').meta({ example: 3 }),
  from: timestamp.describe('The range asked for: from'),
  to: timestamp.describe('The range asked for: to'),
})
const listQuery = pageQuery(25).extend({
  status: z
    .enum(EVENT_STATUSES, { error: `status: must be one of ${EVENT_STATUSES.join(', ')}` })
    .optional()
    .describe('Only events in this status'),
})

export function registerWebhookEventRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  webhooks: WebhookService,
) {
  const scoped = { scope: 'webhooks:manage', cost: 1, what: 'webhooks' } as const
  const byId = z.object({ id: webhookId })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id/events',
    summary: "List a webhook's events",
    description:
      'Newest first, filterable by `status`; each event with its attempt count, last error and `next_retry_at` while a retry is due (docs/webhooks.md, "Event history").',
    schema: { params: byId, query: listQuery },
    responses: { 200: eventList },
    handler: ({ caller, params, query }) =>
      webhooks.events.list(visibleTo(caller, networks), params.id, query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id/events/:event_id',
    summary: 'Get one webhook event',
    description:
      "The payload as delivered, every attempt (status code, error, latency, the first 512 bytes of the receiver's answer) and `matched_by`: the webhook's filters the event satisfies.",
    schema: { params: z.object({ id: webhookId, event_id: eventId }) },
    responses: { 200: eventDetail },
    handler: ({ caller, params }) =>
      webhooks.events.detail(visibleTo(caller, networks), params.id, params.event_id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/redeliver-failed',
    summary: 'Redeliver the failed events of a time range',
    description:
      'Queues every `failed` event created in `[from, to)` (ISO 8601, at most 31 days apart) again and answers how many (`requeued`).',
    schema: { params: byId, body: redeliverBody },
    responses: { 200: requeued },
    handler: ({ caller, params, body }) =>
      webhooks.events.redeliverFailed(visibleTo(caller, networks), params.id, {
        from: new Date(body.from),
        to: new Date(body.to),
      }),
  })
}
