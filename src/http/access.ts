import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ADMIN_TOKEN_HEADER, type AuthService, type Caller } from '../auth/service.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { unauthorized } from '../errors.ts'
import { decideNetwork, refusalError } from './access-decision.ts'

/** The key in a request's headers: `X-API-Key`, then `Authorization: Bearer`. */
export function headerKey(headers: IncomingHttpHeaders): string | undefined {
  const header = headers['x-api-key']
  if (typeof header === 'string' && header !== '') return header.trim()
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth)
    if (m) return m[1]
  }
  return undefined
}

/**
 * The key a WebSocket upgrade presents: the headers first, then `?apiKey=` (browsers
 * cannot set headers on a WebSocket).
 */
export function keyFrom(headers: IncomingHttpHeaders, queryKey: unknown): string | undefined {
  return headerKey(headers) ?? (typeof queryKey === 'string' && queryKey !== '' ? queryKey : undefined)
}

/**
 * Decision: plain HTTP routes take the key from the headers only. A key in a URL ends up in
 * proxy and access logs and in browser history; the WebSocket path (upgrades have no other
 * way) is the one place `?apiKey=` is read. A request whose only key is in the query is told so.
 */
function presentedKey(request: FastifyRequest): string | undefined {
  const config = request.routeOptions.config
  const pathParam = config.route?.keyInPath
  if (pathParam !== undefined) {
    const pathKey = (request.params as Record<string, string | undefined>)[pathParam]
    if (pathKey !== undefined && pathKey !== '') return pathKey
  }
  const queryKey = (request.query as Record<string, unknown> | undefined)?.apiKey
  if (config.route?.keyInQuery) return keyFrom(request.headers, queryKey)
  const key = headerKey(request.headers)
  if (key === undefined && queryKey !== undefined) {
    throw unauthorized(
      'API keys in the URL (?apiKey=) are accepted only on WebSocket upgrades; send the key in the X-API-Key header or as Authorization: Bearer <key>',
    )
  }
  return key
}

export function makeAuthHook(auth: AuthService) {
  // Callback style: a key resolved within the last second answers without a promise per request.
  return function authHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    const config = request.routeOptions.config
    if (request.is404 || config.route?.access === 'public') return done()
    let key: string | undefined
    try {
      key = presentedKey(request)
    } catch (err) {
      return done(err as Error)
    }
    const cached = key === undefined ? undefined : auth.cachedCaller(key)
    // The admin token (from loopback) makes the caller the operator: operator controls only.
    const token = request.headers[ADMIN_TOKEN_HEADER]
    if (cached) {
      request.caller = auth.elevate(cached, token, request.socket)
      return done()
    }
    auth.authenticate(key).then(
      (caller) => {
        request.caller = auth.elevate(caller, token, request.socket)
        done()
      },
      (err: Error) => done(err),
    )
  }
}

/** A network named in a body (wallets, webhooks, policies): the access decision's environment rule. */
export function requireNetworkAccess(caller: Caller, network: Network): void {
  const refused = decideNetwork(caller, network)
  if (refused) throw refusalError(refused)
}

/**
 * Whose objects (webhooks, gas policies) a request sees: its account's, and for a test key only
 * those on networks that are not mainnet. The environment rule covers objects as it covers
 * networks: a test key is told 404 for a mainnet object, exactly as for another account's, and
 * lists leave them out (their totals too). `networks` undefined: every network (a live key, or
 * the account holder in the dashboard).
 */
export interface Viewer {
  readonly accountId: string
  /** The network slugs whose objects this viewer sees; undefined: all of them. */
  readonly networks?: readonly string[]
}

export function visibleTo(caller: Caller, registry: NetworkRegistry): Viewer {
  if (caller.env !== 'test') return { accountId: caller.accountId }
  // Named by the networks configured now: an object on a network no longer configured (mainnet
  // or not, nobody can tell) stays hidden from test keys.
  const networks = registry
    .all()
    .filter((n) => !n.isMainnet)
    .map((n) => n.slug)
  return { accountId: caller.accountId, networks }
}

/** Whether `viewer` sees an object on network `slug` (for the checks a query cannot make). */
export function sees(viewer: Viewer, slug: string): boolean {
  return viewer.networks === undefined || viewer.networks.includes(slug)
}
