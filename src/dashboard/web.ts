import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { errorBody, forbidden, HalyardError, invalidRequest } from '../errors.ts'
import type { Forwarded } from '../net/forwarded.ts'
import type { Html } from './html.ts'
import type { SessionWithAccount } from './session-store.ts'
import type { DashboardSessions } from './sessions.ts'

export const COOKIE = 'halyard_session'

/** Security headers on every dashboard answer: no inline script, no framing, no sniffing. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // Sign-in links carry their token in the URL: no Referer to other sites. (not no-referrer:
  // Chromium then sends `Origin: null` on our own form POSTs, which the Origin check refuses.)
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}

/**
 * Where the dashboard lives and who its clients are. `origin()` is HALYARD_PUBLIC_URL (or the
 * listener's address in dev mode): sign-in links, the Host check and the Origin check use it,
 * never what a request says about itself (docs/behind-a-proxy.md).
 */
export interface DashboardSite {
  origin(): string
  readonly forwarded: Forwarded
}

/** The scheme the browser used: the public URL's, or HTTPS on the socket or from a trusted proxy. */
export function isHttps(site: DashboardSite, request: FastifyRequest): boolean {
  return site.origin().startsWith('https:') || site.forwarded.requestProtocol(request.raw) === 'https'
}

/** The client's address (behind trusted proxies, the one they forwarded): rate limits, session rows. */
export function clientIp(site: DashboardSite, request: FastifyRequest): string {
  return site.forwarded.clientAddress(request.raw)
}

/**
 * A dashboard request must name the public host. Pages and links are built for that host only;
 * answering another name is how a forged Host once steered e-mailed links elsewhere, and it is
 * what DNS rebinding relies on. Refused with 400 invalid_request: RFC 9110 has 421 Misdirected
 * Request for exactly this, but Halyard's error codes stop at 400/401/403/404/429/500, and RFC
 * 9112 section 3.2 answers an unusable Host with 400.
 */
export function checkHost(site: DashboardSite, request: FastifyRequest): void {
  const expected = new URL(site.origin())
  const given = request.headers.host ?? ''
  if (hostOf(expected.protocol, given) === expected.host) return
  const shown = given.length > 100 ? `${given.slice(0, 100)}…` : given
  throw invalidRequest(
    `Host ${JSON.stringify(shown)} is not this dashboard's host ${expected.host}: open ${expected.origin}/dashboard ` +
      '(a reverse proxy must pass the Host header on; the operator sets HALYARD_PUBLIC_URL)',
  )
}

/** A Host header's host[:port] normalised as URL does (lowercase, default port dropped), or undefined. */
function hostOf(protocol: string, header: string): string | undefined {
  if (header === '' || /[\s/\\?#@]/.test(header)) return undefined
  try {
    return new URL(`${protocol}//${header}`).host
  } catch {
    return undefined
  }
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie
  if (!header) return undefined
  for (const part of header.split(';')) {
    const i = part.indexOf('=')
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim()
  }
  return undefined
}

export function setSessionCookie(
  site: DashboardSite,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  maxAgeS: number,
) {
  const secure = isHttps(site, request) ? '; Secure' : ''
  reply.header(
    'set-cookie',
    `${COOKIE}=${token}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure}`,
  )
}

export function clearSessionCookie(site: DashboardSite, request: FastifyRequest, reply: FastifyReply) {
  setSessionCookie(site, request, reply, '', 0)
}

/** Browsers get pages; scripts and the hostile sweep get the JSON error body. */
export function wantsHtml(request: FastifyRequest): boolean {
  return /text\/html/.test(request.headers.accept ?? '')
}

export function sendHtml(reply: FastifyReply, page: Html, status = 200) {
  return reply.status(status).type('text/html; charset=utf-8').send(`<!doctype html>\n${page.value}`)
}

/** A form body as parsed by the dashboard's urlencoded parser (or anything else a client sent). */
export type Form = Record<string, string | string[]>

export function formOf(body: unknown): Form {
  if (body === undefined || body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('body: must be a form')
  return body as Form
}

/** One text field of a form: a single string (a repeated field is refused, naming it). */
export function field(form: Form, name: string): string | undefined {
  const v = form[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw invalidRequest(`${name}: must be given once, as text`)
  if (v.includes('\u0000')) throw invalidRequest(`${name}: must not contain a NUL character`)
  return v
}

/** Every value of a repeatable field (checkboxes). */
export function fields(form: Form, name: string): string[] {
  const v = form[name]
  if (v === undefined) return []
  const all = Array.isArray(v) ? v : [v]
  if (all.some((s) => typeof s !== 'string' || s.includes('\u0000')))
    throw invalidRequest(`${name}: must be text values`)
  return all
}

/** Parses a form with a zod schema; the first problem is a 400 naming its field. */
export function parseForm<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value)
  if (r.success) return r.data
  const issue = r.error.issues[0]
  const where = issue?.path.length ? issue.path.join('.') : 'form'
  throw invalidRequest(`${where}: ${issue?.message ?? 'invalid'}`)
}

/** A textarea that holds JSON; a parse error is a 400 naming the field and the parser's position. */
export function parseJsonField(name: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw invalidRequest(`${name}: not valid JSON (${(err as Error).message.slice(0, 120)})`)
  }
}

/** A text input: trimmed, bounded, no control characters. */
export const textField = (max: number) =>
  z
    .string({ error: 'is required' })
    .trim()
    .max(max, { error: `must be at most ${max} characters` })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
    .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), { error: 'must not contain control characters' })

/**
 * A state-changing request must come from our own pages: the Origin (or, failing that, the
 * Referer) must be the public origin (HALYARD_PUBLIC_URL), and — once signed in — the form must carry the
 * session's CSRF token. Either alone would do against today's browsers; both survive a
 * mistake in the other.
 */
export function checkOrigin(site: DashboardSite, request: FastifyRequest): void {
  const expected = site.origin()
  const origin = request.headers.origin
  if (typeof origin === 'string' && origin !== 'null') {
    if (origin === expected) return
    throw forbidden(`cross-site request refused: Origin ${origin} is not ${expected}`)
  }
  const referer = request.headers.referer
  if (typeof referer === 'string' && (referer === expected || referer.startsWith(`${expected}/`))) return
  throw forbidden('cross-site request refused: the request carries no Origin from this site')
}

export function checkCsrf(
  site: DashboardSite,
  request: FastifyRequest,
  session: SessionWithAccount,
  form: Form,
): void {
  checkOrigin(site, request)
  const given = form._csrf
  if (typeof given !== 'string' || given !== session.csrf_token)
    throw forbidden('_csrf: missing or wrong form token; reload the page and try again')
}

/** Thrown where a browser without a session should go to the sign-in page. */
export class SignInRequired extends HalyardError {
  constructor() {
    super('unauthorized', 'sign in to the dashboard first (POST /dashboard/sign-in)')
  }
}

export async function requireSession(
  sessions: DashboardSessions,
  request: FastifyRequest,
): Promise<SessionWithAccount> {
  const token = readCookie(request, COOKIE)
  const s = token ? await sessions.session(token) : undefined
  if (!s) throw new SignInRequired()
  return s
}

/** Answers an error: an HTML page for browsers, the JSON error body for everyone else. */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  err: HalyardError,
  page: (message: string) => Html,
) {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v)
  if (err instanceof SignInRequired && wantsHtml(request) && request.method === 'GET')
    return reply.redirect('/dashboard/sign-in', 303)
  if (wantsHtml(request)) return sendHtml(reply, page(err.message), err.status)
  return reply.status(err.status).send(errorBody(err))
}
