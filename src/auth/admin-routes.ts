import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { describeZodError } from '../config/validation.ts'
import { forbidden, invalidRequest, unauthorized } from '../errors.ts'
import type { AuthService } from './service.ts'

/**
 * The loopback admin API the CLI uses while a server holds a PGlite data dir (PGlite is
 * single-process). Reachable only from loopback and only with the token the server wrote
 * to its data dir.
 */
export function registerAdminRoutes(app: FastifyInstance, auth: AuthService, adminToken: string) {
  const expected = Buffer.from(adminToken)
  const guard = async (request: FastifyRequest) => {
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
  const parse = <T>(schema: z.ZodType<T>, body: unknown): T => {
    const r = schema.safeParse(body ?? {})
    if (!r.success) throw invalidRequest(describeZodError(r.error))
    return r.data
  }
  const opts = { config: { public: true }, onRequest: guard }

  app.post('/admin/accounts', opts, async (request, reply) => {
    const b = parse(z.object({ email: z.string(), plan: z.string().optional() }), request.body)
    const account = await auth.createAccount(b.email, b.plan)
    return reply.status(201).send({ id: account.id, email: account.email, plan: account.plan })
  })

  app.post('/admin/accounts/plan', opts, async (request) => {
    const b = parse(z.object({ email: z.string(), plan: z.string() }), request.body)
    const account = await auth.setPlan(b.email, b.plan)
    return { id: account.id, email: account.email, plan: account.plan }
  })

  app.post('/admin/keys', opts, async (request, reply) => {
    const b = parse(
      z.object({
        account: z.string(),
        env: z.string(),
        scopes: z.array(z.string()).optional(),
        name: z.string().optional(),
      }),
      request.body,
    )
    const created = await auth.createKey({
      accountEmail: b.account,
      env: b.env,
      scopes: b.scopes,
      name: b.name,
    })
    return reply.status(201).send(created)
  })

  app.get('/admin/keys', opts, async (request) => {
    const q = parse(z.object({ account: z.string() }), request.query)
    return { keys: await auth.listKeys(q.account) }
  })

  app.post<{ Params: { id: string } }>('/admin/keys/:id/revoke', opts, async (request) =>
    auth.revokeKey(request.params.id),
  )
}
