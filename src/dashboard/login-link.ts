import type { FastifyInstance, FastifyRequest } from 'fastify'
import { z } from 'zod'
import type { AuthService } from '../auth/service.ts'
import { invalidRequest } from '../errors.ts'
import { definePublicRoute } from '../http/route.ts'
import type { DashboardSessions } from './sessions.ts'

/** The origin a sign-in link points at: an http(s) URL with nothing after the host. */
export function linkOrigin(raw: string): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw invalidRequest(`base_url: not a URL: ${raw.slice(0, 200)}`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw invalidRequest('base_url: must be an http:// or https:// URL')
  return u.origin
}

/** `halyard accounts login-link --account E`: a sign-in link for an account, printed for the operator. */
export async function loginLinkFor(
  auth: AuthService,
  sessions: Pick<DashboardSessions, 'createLink'>,
  email: string,
  baseUrl: string,
): Promise<string> {
  const origin = linkOrigin(baseUrl)
  const account = await auth.accountByEmail(email)
  return sessions.createLink(account.id, origin)
}

/** The admin API's route for it (the CLI's path while a server holds a PGlite data dir). */
export function registerLoginLinkAdminRoute(
  app: FastifyInstance,
  auth: AuthService,
  sessions: DashboardSessions,
  guard: (request: FastifyRequest) => Promise<void>,
  /** Where links point when the body names no base_url: the public URL. */
  publicOrigin: () => string,
): void {
  const text = z
    .string()
    .min(1)
    .max(320)
    .refine((v) => !v.includes('\u0000'), { message: 'must not contain a NUL character' })
  definePublicRoute(app, {
    guard,
    method: 'POST',
    url: '/admin/login-links',
    schema: {
      body: z.object({
        account: text.meta({ example: 'ops@example.com' }),
        base_url: text.optional().meta({ example: 'https://halyard.example.com' }),
      }),
    },
    handler: async ({ body, reply }) =>
      reply
        .status(201)
        .send({ url: await loginLinkFor(auth, sessions, body.account, body.base_url ?? publicOrigin()) }),
  })
}
