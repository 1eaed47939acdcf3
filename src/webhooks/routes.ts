import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { requireNetworkAccess, visibleTo } from '../http/access.ts'
import { idParam, pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import { EVENT_TYPES, eventTypeSchema, eventTypesSchema, MAX_ITEMS } from './config.ts'
import { formatSchema } from './form-b.ts'
import { view, type WebhookService } from './service.ts'

/**
 * The webhook API (with history, test event and redelivery). Wire shapes only: every body and query is
 * declared with zod here and a violation is a 400 naming the field; logic lives in service.ts.
 * Webhooks belong to the caller's account; another account's id is a 404, and so is a mainnet
 * webhook for a test key (visibleTo), which lists leave out.
 */

const url = (error: string) =>
  z
    .string({ error })
    .meta({ description: 'The HTTPS URL deliveries are POSTed to', example: 'https://receiver.example/hook' })
/*
 * The filter keys, declared here for the OpenAPI document; which keys an event
 * type reads, and their full rules, are checked by config.ts (parseConfig), which refuses a key
 * the webhook's types do not read. Every filter runs in the matcher, before an event exists.
 */
// Lists are not capped here: parseConfig's refusal names the field and the cap.
const addressList = (what: string, example: string) =>
  z
    .array(z.string())
    .describe(`${what} (0x addresses, at most ${MAX_ITEMS})`)
    .meta({ example: [example] })
    .optional()
const config = z
  .looseObject(
    {
      addresses: addressList(
        'address filter: address_activity, token_transfer, nft_transfer, internal_transfer and pending_transaction match when one of these sends or receives (see address_match); log matches logs these contracts emit. Required for address_activity and pending_transaction',
        '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045',
      ),
      address_match: z
        .enum(['either', 'from', 'to'])
        .describe('which side of a transfer or transaction `addresses` must be on (default either)')
        .optional(),
      contracts: addressList(
        'token contract filter (token_transfer, nft_transfer)',
        '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      ),
      min_value: z
        .string()
        .describe(
          'minimum value in base units, as a decimal string (address_activity: native value; token_transfer: raw token amount; internal_transfer: wei)',
        )
        .meta({ example: '1000000000000000000' })
        .optional(),
      min_value_per_contract: z
        .record(z.string(), z.string())
        .describe(
          'token_transfer: minimum raw amount per token contract (address → decimal string); other contracts use min_value',
        )
        .optional(),
      selectors: z
        .array(z.string())
        .describe('address_activity: 4-byte function selectors of the transaction (e.g. 0xa9059cbb)')
        .meta({ example: ['0xa9059cbb'] })
        .optional(),
      tx_hashes: z
        .array(z.string())
        .describe(`mined_transaction: the transaction hashes to report (required; at most ${MAX_ITEMS})`)
        .meta({ example: ['0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060'] })
        .optional(),
      topics: z
        .array(z.union([z.null(), z.string(), z.array(z.string())]))
        .describe(
          'log: at most 4 topic hashes by position, as in eth_getLogs (null = any; a list = any of them)',
        )
        .optional(),
    },
    { error: 'config: must be an object' },
  )
  .describe("filters of the webhook's event types; keys a type does not read are refused")
  .meta({ example: { addresses: ['0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a'], address_match: 'to' } })
const eventTypes = eventTypesSchema
  .describe(
    `several event types for one webhook (one of ${EVENT_TYPES.join(', ')} each); instead of event_type, not with it`,
  )
  .meta({ example: ['token_transfer', 'nft_transfer'] })

const createBody = z.strictObject({
  url: url('url: is required and must be a string'),
  chain: z
    .string({ error: 'chain: is required and must be a string' })
    .min(1)
    .meta({ description: 'The network slug the webhook watches', example: 'ethereum-devnet' }),
  event_type: eventTypeSchema
    .meta({ description: `The event type (${EVENT_TYPES.join(', ')})`, example: 'address_activity' })
    .optional(),
  event_types: eventTypes.optional(),
  config: config.optional(),
  format: formatSchema.meta({ description: 'Delivery form: A (default) or B', example: 'A' }).optional(),
})

const patchBody = z.strictObject({
  url: url('url: must be a string').optional(),
  status: z
    .enum(['active', 'paused'], {
      error: (issue) =>
        issue.input === 'disabled'
          ? 'status: cannot be set to disabled (only the service disables a webhook); use active or paused'
          : 'status: must be active or paused',
    })
    .meta({ description: 'active delivers, paused holds events', example: 'active' })
    .optional(),
  config: config.optional(),
  format: formatSchema.meta({ description: 'Delivery form: A or B', example: 'B' }).optional(),
  event_type: eventTypeSchema
    .meta({ description: 'The one event type (replaces event_types)', example: 'token_transfer' })
    .optional(),
  event_types: eventTypes.optional(),
})

export const webhookId = idParam(
  'id',
  /^wh_[0-9a-f]{24}$/,
  'a webhook id (wh_ followed by 24 hex digits)',
  'wh_0123456789abcdef01234567',
)
export const eventId = idParam(
  'event_id',
  /^evt_[0-9a-f]{24}$/,
  'an event id (evt_ followed by 24 hex digits)',
  'evt_0123456789abcdef01234567',
)
const byId = z.object({ id: webhookId })
const listQuery = pageQuery(25).extend({
  status: z
    .enum(['active', 'paused', 'disabled'], { error: 'status: must be active, paused or disabled' })
    .optional()
    .describe('Only webhooks in this status'),
})

/* Response bodies, for the OpenAPI document; service.ts builds them. */
export const timestamp = z.string().describe('ISO 8601, UTC').meta({ example: '2026-11-26T10:00:00.000Z' })
/** One delivery attempt, as the delivery log and an event's history both show it. */
export const deliveryAttempt = z.object({
  attempt: z.number().int().describe('1 for the first try, then each retry').meta({ example: 1 }),
  status_code: z
    .number()
    .int()
    .nullable()
    .describe("The receiver's HTTP status; null without an answer (timeout, refused)")
    .meta({ example: 200 }),
  error: z
    .string()
    .nullable()
    .describe('Why it failed; null when the receiver answered 2xx')
    .meta({ example: null }),
  duration_ms: z.number().int().describe('How long the attempt took').meta({ example: 143 }),
  created_at: timestamp.describe('When it was attempted (ISO 8601, UTC)'),
})
const webhookStatus = z.enum(['active', 'paused', 'disabled'])
const webhook = z.object({
  id: z.string().describe('The webhook id (wh_…)').meta({ example: 'wh_0123456789abcdef01234567' }),
  url: z.string().describe('Where deliveries are POSTed').meta({ example: 'https://receiver.example/hook' }),
  chain: z.string().describe('The network slug it watches').meta({ example: 'ethereum-devnet' }),
  event_type: eventTypeSchema.describe('the first of event_types'),
  event_types: z.array(eventTypeSchema).describe('every event type the webhook monitors'),
  config: z.record(z.string(), z.unknown()).describe("the event types' filters, as stored"),
  format: formatSchema.describe(
    'delivery form: A (timestamped signature, the default) or B (Alchemy/QuickNode style: X-Service-Signature, camelCase data)',
  ),
  status: webhookStatus.describe('active delivers; paused holds events; disabled: the service stopped it'),
  status_reason: z
    .string()
    .nullable()
    .describe('why the service paused or disabled it')
    .meta({ example: null }),
  created_at: timestamp.describe('When it was created (ISO 8601, UTC)'),
  updated_at: timestamp.describe('When it last changed (ISO 8601, UTC)'),
})
const signingSecret = z
  .string()
  .describe('returned only in this response')
  .meta({ example: 'whsec_3q2-7wRmGx1mH0b8l6e4rN8kZ4vJt1uP0cQyXa9sDfE' })
const createdWebhook = webhook.extend({ signing_secret: signingSecret })
const summary = {
  id: true,
  url: true,
  chain: true,
  event_type: true,
  event_types: true,
  status: true,
} as const
const webhookList = z.object({
  webhooks: z.array(webhook.pick({ ...summary, created_at: true })).describe('Newest first'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('Webhooks in all pages').meta({ example: 42 }),
})
const updatedWebhook = webhook.pick({ ...summary, updated_at: true })
const deletedWebhook = z.object({
  id: z.string().describe('The deleted webhook').meta({ example: 'wh_0123456789abcdef01234567' }),
  deleted: z.literal(true).describe('Always true'),
})
const deliveryList = z.object({
  deliveries: z
    .array(
      deliveryAttempt.extend({
        event_id: z
          .string()
          .describe('The event delivered (evt_…)')
          .meta({ example: 'evt_0123456789abcdef01234567' }),
      }),
    )
    .describe('Newest first'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('Attempts in all pages').meta({ example: 42 }),
})
const queuedEvent = z.object({
  id: z.string().describe('The event id (evt_…)').meta({ example: 'evt_0123456789abcdef01234567' }),
  webhook_id: z.string().describe('The webhook it is for').meta({ example: 'wh_0123456789abcdef01234567' }),
  status: z.literal('pending').describe('Queued for delivery'),
})
const testEvent = queuedEvent.extend({
  queued: z
    .boolean()
    .describe('false while the webhook is not active: delivered once it is')
    .meta({ example: true }),
})
const rotatedSecret = z.object({
  id: z.string().describe('The webhook id').meta({ example: 'wh_0123456789abcdef01234567' }),
  signing_secret: signingSecret,
  updated_at: timestamp.describe('When the secret changed (ISO 8601, UTC)'),
})

export function registerWebhookRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  webhooks: WebhookService,
) {
  const scoped = { scope: 'webhooks:manage', cost: 1, what: 'webhooks' } as const

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks',
    summary: 'Create a webhook',
    description:
      'Delivers matching events (address activity, token, NFT and internal transfers, mined and pending transactions, logs, new blocks) on one network to an HTTPS URL, signed with the `signing_secret` answered here once. `format` picks delivery form A (default) or B; docs/webhooks-verify.md shows how a receiver checks either.',
    schema: { body: createBody },
    responses: { 201: createdWebhook },
    handler: async ({ caller, body, reply }) => {
      requireNetworkAccess(caller, networks.getBySlug(body.chain))
      const created = await webhooks.create(
        { accountId: caller.accountId, email: caller.email, plan: caller.plan },
        body,
      )
      reply.code(201)
      return created
    },
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks',
    summary: 'List webhooks',
    description:
      "The account's webhooks, newest first, paginated with `page` and `limit` (25 by default, 100 at most). Secrets are never shown again.",
    schema: { query: listQuery },
    responses: { 200: webhookList },
    handler: ({ caller, query }) => webhooks.list(visibleTo(caller, networks), query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id',
    summary: 'Get a webhook',
    description:
      'One webhook of the account: URL, network, event types, config, delivery form and status (`active`, `paused` after repeated failures, or `disabled`).',
    schema: { params: byId },
    responses: { 200: webhook },
    handler: async ({ caller, params }) => view(await webhooks.get(visibleTo(caller, networks), params.id)),
  })

  defineRoute(app, {
    ...scoped,
    method: 'PATCH',
    url: '/v1/webhooks/:id',
    summary: 'Update a webhook',
    description:
      'Changes the URL, event types, config, delivery form or status; `status: "active"` resumes a paused webhook and its pending events. Applies to events matched after it.',
    schema: { params: byId, body: patchBody },
    responses: { 200: updatedWebhook },
    handler: ({ caller, params, body }) => webhooks.update(visibleTo(caller, networks), params.id, body),
  })

  defineRoute(app, {
    ...scoped,
    method: 'DELETE',
    url: '/v1/webhooks/:id',
    summary: 'Delete a webhook',
    description: 'Deletes the webhook; its pending events are not delivered.',
    schema: { params: byId },
    responses: { 200: deletedWebhook },
    handler: ({ caller, params }) => webhooks.delete(visibleTo(caller, networks), params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id/deliveries',
    summary: 'Delivery history',
    description:
      "The webhook's delivery attempts, newest first: event id, attempt number, the receiver's status code or the error, and the duration; paginated with `page` and `limit`.",
    schema: { params: byId, query: pageQuery(25) },
    responses: { 200: deliveryList },
    handler: ({ caller, params, query }) =>
      webhooks.deliveries(visibleTo(caller, networks), params.id, query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/test',
    summary: 'Send a test event',
    description:
      "Queues a sample event of the webhook's first event type, marked `test: true`, signed and delivered like a real one (not while the webhook is paused).",
    schema: { params: byId },
    responses: { 200: testEvent },
    handler: ({ caller, params }) => webhooks.sendTest(visibleTo(caller, networks), params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/rotate-secret',
    summary: 'Rotate the signing secret',
    description:
      'Makes a new signing secret and answers it once; every attempt from now on, retries of older events included, is signed with it only.',
    schema: { params: byId },
    responses: { 200: rotatedSecret },
    handler: ({ caller, params }) => webhooks.rotateSecret(visibleTo(caller, networks), params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/deliveries/:event_id/redeliver',
    summary: 'Redeliver an event',
    description:
      'Queues one recorded event again, with a fresh retry schedule, whatever its outcome was. The event id stays the same, so receivers deduplicate it.',
    schema: { params: z.object({ id: webhookId, event_id: eventId }) },
    responses: { 200: queuedEvent },
    handler: ({ caller, params }) =>
      webhooks.redeliver(visibleTo(caller, networks), params.id, params.event_id),
  })
}
