import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { forbidden, unauthorized } from '../errors.ts'
import { definePublicRoute } from '../http/route.ts'
import { ALLOWLIST_NAMES, type AllowlistName } from './allowlists.ts'
import type { AllowlistInput, AuthService } from './service.ts'

/** The admin API's guard: loopback only, and the token the server wrote to its data dir. */
export function makeAdminGuard(adminToken: string): (request: FastifyRequest) => Promise<void> {
  const expected = Buffer.from(adminToken)
  return async (request: FastifyRequest): Promise<void> => {
    const ip = request.socket.remoteAddress ?? ''
    if (!(ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1')) {
      throw forbidden('the admin API is only reachable from loopback')
    }
    const m = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')
    const given = Buffer.from(m?.[1] ?? '')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw unauthorized('missing or invalid admin token')
    }
  }
}

/**
 * The loopback admin API the CLI uses while a server holds a PGlite data dir (PGlite is
 * single-process). Reachable only from loopback and only with the token the server wrote
 * to its data dir.
 */
export function registerAdminRoutes(app: FastifyInstance, auth: AuthService, adminToken: string) {
  const guard = makeAdminGuard(adminToken)
  // PostgreSQL text cannot hold NUL: refused here with a 400 naming the field, not by the
  // database with a 500.
  const text = z
    .string()
    .min(1)
    .max(320)
    .refine((v) => !v.includes('\u0000'), { message: 'must not contain a NUL character' })

  const email = text.meta({ example: 'ops@example.com' })
  const plan = text.meta({ example: 'growth' })
  // Each list: up to a few thousand entries on the wire (the service holds the real limits and
  // names the bad entry); [] or null clears the list on an update.
  const list = z.array(z.string().max(1000)).max(5000)
  const lists = {
    allowed_origins: list.meta({ example: ['https://app.example.com', '*.example.com'] }).optional(),
    allowed_ips: list.meta({ example: ['203.0.113.7', '10.0.0.0/8'] }).optional(),
    allowed_contracts: list.meta({ example: ['0x0000000000000000000000000000000000000001'] }).optional(),
    allowed_methods: list.meta({ example: ['eth_blockNumber', 'eth_call'] }).optional(),
  }
  const admin = { guard } as const
  const account = (a: { id: string; email: string; plan: string }) => ({
    id: a.id,
    email: a.email,
    plan: a.plan,
  })

  definePublicRoute(app, {
    ...admin,
    method: 'POST',
    url: '/admin/accounts',
    schema: { body: z.object({ email, plan: plan.optional() }) },
    handler: async ({ body, reply }) =>
      reply.status(201).send(account(await auth.createAccount(body.email, body.plan))),
  })

  definePublicRoute(app, {
    ...admin,
    method: 'POST',
    url: '/admin/accounts/plan',
    schema: { body: z.object({ email, plan }) },
    handler: async ({ body }) => account(await auth.setPlan(body.email, body.plan)),
  })

  definePublicRoute(app, {
    ...admin,
    method: 'POST',
    url: '/admin/keys',
    schema: {
      body: z.object({
        account: email,
        env: text.meta({ example: 'live' }),
        scopes: z
          .array(text)
          .meta({ example: ['rpc:read'] })
          .optional(),
        name: text.meta({ example: 'ci' }).optional(),
        ...lists,
      }),
    },
    handler: async ({ body, reply }) => {
      const created = await auth.createKey({
        accountEmail: body.account,
        env: body.env,
        scopes: body.scopes,
        name: body.name,
        allow: allowlistInput(body),
      })
      return reply.status(201).send(created)
    },
  })

  definePublicRoute(app, {
    ...admin,
    method: 'GET',
    url: '/admin/keys',
    schema: { query: z.object({ account: email }) },
    handler: async ({ query }) => ({ keys: await auth.listKeys(query.account) }),
  })

  definePublicRoute(app, {
    ...admin,
    method: 'PATCH',
    url: '/admin/keys/:id',
    schema: {
      params: z.object({ id: text.meta({ example: 'key_does_not_exist' }) }),
      body: z.object({
        allowed_origins: lists.allowed_origins.nullable(),
        allowed_ips: lists.allowed_ips.nullable(),
        allowed_contracts: lists.allowed_contracts.nullable(),
        allowed_methods: lists.allowed_methods.nullable(),
      }),
    },
    handler: ({ params, body }) => auth.updateKeyAllowlists(params.id, allowlistInput(body)),
  })

  definePublicRoute(app, {
    ...admin,
    method: 'POST',
    url: '/admin/keys/:id/revoke',
    schema: { params: z.object({ id: text.meta({ example: 'key_does_not_exist' }) }) },
    handler: ({ params }) => auth.revokeKey(params.id),
  })
}

type WireLists = Partial<Record<`allowed_${AllowlistName}`, readonly string[] | null | undefined>>

/** The wire's `allowed_*` fields as the service's lists: absent = unchanged, null or [] = cleared. */
export function allowlistInput(body: WireLists): AllowlistInput {
  const out: AllowlistInput = {}
  for (const name of ALLOWLIST_NAMES) {
    const v = body[`allowed_${name}`]
    if (v !== undefined) out[name] = v ?? []
  }
  return out
}
