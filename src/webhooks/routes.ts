import type { FastifyInstance, FastifyRequest } from 'fastify'
import { z } from 'zod'
import type { Caller } from '../auth/service.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import { describeZodError } from '../config/validation.ts'
import { invalidRequest } from '../errors.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import { eventTypeSchema } from './config.ts'
import { view, type WebhookService } from './service.ts'

/**
 * Spec 4.5 (+ history, test event and redelivery). Wire shapes only: every body and query is
 * parsed with zod here and a violation is a 400 naming the field; logic lives in service.ts.
 * Webhooks belong to the caller's account (DESIGN.md); another account's id is a 404.
 */

const ID_RE = /^wh_[0-9a-f]{24}$/
const EVENT_ID_RE = /^evt_[0-9a-f]{24}$/

const createBody = z.strictObject({
  url: z.string({ error: 'url: is required and must be a string' }),
  chain: z.string({ error: 'chain: is required and must be a string' }).min(1),
  event_type: eventTypeSchema,
  config: z.record(z.string(), z.unknown(), { error: 'config: must be an object' }).optional(),
})

const patchBody = z.strictObject({
  url: z.string({ error: 'url: must be a string' }).optional(),
  status: z
    .enum(['active', 'paused'], {
      error: (issue) =>
        issue.input === 'disabled'
          ? 'status: cannot be set to disabled (only the service disables a webhook); use active or paused'
          : 'status: must be active or paused',
    })
    .optional(),
  config: z.record(z.string(), z.unknown(), { error: 'config: must be an object' }).optional(),
})

const intParam = (name: string, max: number, dflt: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `${name}: must be an integer between 1 and ${max}`)
    .transform(Number)
    .refine((n) => n >= 1 && n <= max, `${name}: must be an integer between 1 and ${max}`)
    .optional()
    .transform((n) => n ?? dflt)

const pageQuery = z.object({ page: intParam('page', 1_000_000, 1), limit: intParam('limit', 100, 25) })
const listQuery = pageQuery.extend({
  status: z
    .enum(['active', 'paused', 'disabled'], { error: 'status: must be active, paused or disabled' })
    .optional(),
})

/** Parses with zod; the first problem becomes a 400 whose message names the field. */
function parse<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const r = schema.safeParse(value ?? {})
  if (r.success) return r.data
  // Our own messages already start with the field name; zod's generic ones get the path.
  const issue = r.error.issues[0]
  if (issue && /^[a-z_]+: /.test(issue.message)) throw invalidRequest(issue.message)
  throw invalidRequest(`${what}: ${describeZodError(r.error)}`)
}

function webhookId(request: FastifyRequest): string {
  const { id } = request.params as { id: string }
  if (!ID_RE.test(id))
    throw invalidRequest(`id: must be a webhook id (wh_ followed by 24 hex digits), got "${id.slice(0, 40)}"`)
  return id
}

const caller = (request: FastifyRequest): Caller => request.caller as Caller

export function registerWebhookRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  webhooks: WebhookService,
) {
  app.post('/v1/webhooks', async (request) => {
    const body = parse(createBody, request.body, 'body')
    const who = caller(request)
    requireNetworkAccess(who, networks.getBySlug(body.chain))
    return webhooks.create({ accountId: who.accountId, email: who.email }, body)
  })

  app.get('/v1/webhooks', async (request) => {
    const q = parse(listQuery, request.query, 'query')
    return webhooks.list(caller(request).accountId, q)
  })

  app.get('/v1/webhooks/:id', async (request) => {
    return view(await webhooks.get(caller(request).accountId, webhookId(request)))
  })

  app.patch('/v1/webhooks/:id', async (request) => {
    const id = webhookId(request)
    const body = parse(patchBody, request.body, 'body')
    return webhooks.update(caller(request).accountId, id, body)
  })

  app.delete('/v1/webhooks/:id', async (request) => {
    return webhooks.delete(caller(request).accountId, webhookId(request))
  })

  app.get('/v1/webhooks/:id/deliveries', async (request) => {
    const q = parse(pageQuery, request.query, 'query')
    return webhooks.deliveries(caller(request).accountId, webhookId(request), q)
  })

  app.post('/v1/webhooks/:id/test', async (request) => {
    return webhooks.sendTest(caller(request).accountId, webhookId(request))
  })

  app.post('/v1/webhooks/:id/deliveries/:event_id/redeliver', async (request) => {
    const id = webhookId(request)
    const { event_id } = request.params as { event_id: string }
    if (!EVENT_ID_RE.test(event_id))
      throw invalidRequest('event_id: must be an event id (evt_ followed by 24 hex digits)')
    return webhooks.redeliver(caller(request).accountId, id, event_id)
  })
}
