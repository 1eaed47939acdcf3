import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { requireNetworkAccess } from '../http/access.ts'
import { idParam, pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import { eventTypeSchema } from './config.ts'
import { view, type WebhookService } from './service.ts'

/**
 * Spec 4.5 (+ history, test event and redelivery). Wire shapes only: every body and query is
 * declared with zod here and a violation is a 400 naming the field; logic lives in service.ts.
 * Webhooks belong to the caller's account (DESIGN.md); another account's id is a 404.
 */

const url = (error: string) => z.string({ error }).meta({ example: 'https://receiver.example/hook' })
const config = z
  .record(z.string(), z.unknown(), { error: 'config: must be an object' })
  .meta({ example: { addresses: ['0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a'] } })

const createBody = z.strictObject({
  url: url('url: is required and must be a string'),
  chain: z
    .string({ error: 'chain: is required and must be a string' })
    .min(1)
    .meta({ example: 'ethereum-devnet' }),
  event_type: eventTypeSchema.meta({ example: 'address_activity' }),
  config: config.optional(),
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
    .meta({ example: 'active' })
    .optional(),
  config: config.optional(),
})

const webhookId = idParam(
  'id',
  /^wh_[0-9a-f]{24}$/,
  'a webhook id (wh_ followed by 24 hex digits)',
  'wh_0123456789abcdef01234567',
)
const eventId = idParam(
  'event_id',
  /^evt_[0-9a-f]{24}$/,
  'an event id (evt_ followed by 24 hex digits)',
  'evt_0123456789abcdef01234567',
)
const byId = z.object({ id: webhookId })
const listQuery = pageQuery(25).extend({
  status: z
    .enum(['active', 'paused', 'disabled'], { error: 'status: must be active, paused or disabled' })
    .optional(),
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
    schema: { body: createBody },
    handler: async ({ caller, body, reply }) => {
      requireNetworkAccess(caller, networks.getBySlug(body.chain))
      const created = await webhooks.create({ accountId: caller.accountId, email: caller.email }, body)
      reply.code(201)
      return created
    },
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks',
    schema: { query: listQuery },
    handler: ({ caller, query }) => webhooks.list(caller.accountId, query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id',
    schema: { params: byId },
    handler: async ({ caller, params }) => view(await webhooks.get(caller.accountId, params.id)),
  })

  defineRoute(app, {
    ...scoped,
    method: 'PATCH',
    url: '/v1/webhooks/:id',
    schema: { params: byId, body: patchBody },
    handler: ({ caller, params, body }) => webhooks.update(caller.accountId, params.id, body),
  })

  defineRoute(app, {
    ...scoped,
    method: 'DELETE',
    url: '/v1/webhooks/:id',
    schema: { params: byId },
    handler: ({ caller, params }) => webhooks.delete(caller.accountId, params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/webhooks/:id/deliveries',
    schema: { params: byId, query: pageQuery(25) },
    handler: ({ caller, params, query }) => webhooks.deliveries(caller.accountId, params.id, query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/test',
    schema: { params: byId },
    handler: ({ caller, params }) => webhooks.sendTest(caller.accountId, params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/webhooks/:id/deliveries/:event_id/redeliver',
    schema: { params: z.object({ id: webhookId, event_id: eventId }) },
    handler: ({ caller, params }) => webhooks.redeliver(caller.accountId, params.id, params.event_id),
  })
}
