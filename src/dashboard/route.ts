import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { HalyardError } from '../errors.ts'
import { definePublicRoute } from '../http/route.ts'
import { Html, html } from './html.ts'
import { layout, notice } from './layout.ts'
import type { SessionWithAccount } from './session-store.ts'
import type { DashboardSessions } from './sessions.ts'
import {
  checkCsrf,
  checkOrigin,
  type DashboardSite,
  type Form,
  formOf,
  requireSession,
  sendError,
  sendHtml,
} from './web.ts'

export interface PageInput {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  /** The POST form (empty on GET). */
  readonly form: Form
}

export interface SignedInInput extends PageInput {
  readonly session: SessionWithAccount
}

/** Every `:id` in a dashboard path: a key, session, webhook or policy id (unknown ones are 404s). */
const idParams = z.object({
  id: z
    .string()
    .min(1)
    .max(100, { error: 'must be at most 100 characters' })
    .regex(/^[A-Za-z0-9_-]+$/, { error: 'must be an id (letters, digits, _ and -)' })
    .meta({ example: 'wh_000000000000000000000000' }),
})

/** An event's page names its webhook and the event (`/webhooks/:id/events/:event_id`). */
const eventParams = idParams.extend({
  event_id: z
    .string()
    .regex(/^evt_[0-9a-f]{24}$/, { error: 'must be an event id (evt_ followed by 24 hex digits)' })
    .meta({ example: 'evt_000000000000000000000000' }),
})

/** What a page handler gives back: a page to send, or nothing when it answered itself (redirect). */
type Out = Html | undefined

/**
 * Dashboard routes are public routes (no API key) with the dashboard's own gate: the session
 * cookie, and on every POST the Origin check plus — once signed in — the session's CSRF token.
 * A refusal is an HTML page for browsers and the JSON error body for everyone else.
 */
export class DashboardRoutes {
  constructor(
    private readonly app: FastifyInstance,
    readonly sessions: DashboardSessions,
    readonly site: DashboardSite,
  ) {}

  /** A page for signed-in account holders. */
  signedIn(method: 'GET' | 'POST', url: string, handler: (x: SignedInInput) => Promise<Out>): void {
    this.route(method, url, async (request, reply) => {
      let session: SessionWithAccount | undefined
      try {
        session = await requireSession(this.sessions, request)
        const form = method === 'POST' ? formOf(request.body) : {}
        if (method === 'POST') checkCsrf(this.site, request, session, form)
        return await this.answer(reply, await handler({ request, reply, form, session }))
      } catch (err) {
        return this.fail(request, reply, err, session)
      }
    })
  }

  /** A page open to everyone (sign-in): POSTs still must come from our own origin. */
  open(method: 'GET' | 'POST', url: string, handler: (x: PageInput) => Promise<Out>): void {
    this.route(method, url, async (request, reply) => {
      try {
        const form = method === 'POST' ? formOf(request.body) : {}
        if (method === 'POST') checkOrigin(this.site, request)
        return await this.answer(reply, await handler({ request, reply, form }))
      } catch (err) {
        return this.fail(request, reply, err, undefined)
      }
    })
  }

  private route(
    method: 'GET' | 'POST',
    url: string,
    handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  ): void {
    definePublicRoute(this.app, {
      method,
      url,
      what: `dashboard ${method} ${url}`,
      ...(url.includes(':event_id')
        ? { schema: { params: eventParams } }
        : url.includes(':id')
          ? { schema: { params: idParams } }
          : {}),
      handler: ({ request, reply }) => handler(request, reply),
    })
  }

  private answer(reply: FastifyReply, out: Out) {
    // A handler may have set the status (a refused form is answered 400 with the form as typed).
    if (out instanceof Html) return sendHtml(reply, out, reply.statusCode)
    return reply
  }

  /** Answers a refusal from outside a page handler (the Host check) as the pages do. */
  refuse(request: FastifyRequest, reply: FastifyReply, err: HalyardError) {
    return this.fail(request, reply, err, undefined)
  }

  private fail(
    request: FastifyRequest,
    reply: FastifyReply,
    err: unknown,
    session: SessionWithAccount | undefined,
  ) {
    if (!(err instanceof HalyardError)) throw err
    return sendError(request, reply, err, (message) =>
      layout({
        title: err.status === 404 ? 'Not found' : 'Something is wrong',
        session,
        body: html`${notice('error', message)}<p>Use your browser's Back button to correct the form, or go to the <a href="/dashboard">dashboard</a>.</p>`,
      }),
    )
  }
}
