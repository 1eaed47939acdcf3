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
  // PostgreSQL text cannot hold NUL: refused here with a 400 naming the field, not by the
  // database with a 500.
  const text = z
    .string()
    .min(1)
    .max(320)
    .refine((v) => !v.includes('\u0000'), { message: 'must not contain a NUL character' })

  app.post('/admin/accounts', opts, async (request, reply) => {
    const b = parse(z.object({ email: text, plan: text.optional() }), request.body)
    const account = await auth.createAccount(b.email, b.plan)
    return reply.status(201).send({ id: account.id, email: account.email, plan: account.plan })
  })

  app.post('/admin/accounts/plan', opts, async (request) => {
    const b = parse(z.object({ email: text, plan: text }), request.body)
    const account = await auth.setPlan(b.email, b.plan)
    return { id: account.id, email: account.email, plan: account.plan }
  })

  app.post('/admin/keys', opts, async (request, reply) => {
    const b = parse(
      z.object({
        account: text,
        env: text,
        scopes: z.array(text).optional(),
        name: text.optional(),
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
    const q = parse(z.object({ account: text }), request.query)
    return { keys: await auth.listKeys(q.account) }
  })

  app.post<{ Params: { id: string } }>('/admin/keys/:id/revoke', opts, async (request) => {
    const p = parse(z.object({ id: text }), request.params)
    return auth.revokeKey(p.id)
  })
}
