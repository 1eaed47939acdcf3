import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Scope } from '../auth/scopes.ts'
import type { AuthService, Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { forbidden } from '../errors.ts'

/**
 * The key a request presents, in one order for HTTP and WebSocket upgrades: `X-API-Key`, then
 * `Authorization: Bearer`, then `?apiKey=` (browsers cannot set headers on a WebSocket).
 */
export function keyFrom(headers: IncomingHttpHeaders, queryKey: unknown): string | undefined {
  const header = headers['x-api-key']
  if (typeof header === 'string' && header !== '') return header.trim()
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth)
    if (m) return m[1]
  }
  return typeof queryKey === 'string' && queryKey !== '' ? queryKey : undefined
}

export function presentedKey(request: FastifyRequest): string | undefined {
  return keyFrom(request.headers, (request.query as Record<string, unknown> | undefined)?.apiKey)
}

export function makeAuthHook(auth: AuthService) {
  // Callback style: a key resolved within the last second answers without a promise per request.
  return function authHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    if (request.is404 || request.routeOptions.config?.public) return done()
    const key = presentedKey(request)
    const cached = key === undefined ? undefined : auth.cachedCaller(key)
    if (cached) {
      request.caller = cached
      return done()
    }
    auth.authenticate(key).then(
      (caller) => {
        request.caller = caller
        done()
      },
      (err: Error) => done(err),
    )
  }
}

export function requireScope(caller: Caller, scope: Scope, what: string): void {
  if (!caller.scopes.has(scope)) throw forbidden(`this API key lacks the ${scope} scope required for ${what}`)
}

/** A test key may not touch any mainnet network (spec section 5). */
export function requireNetworkAccess(caller: Caller, network: Network): void {
  if (caller.env === 'test' && network.isMainnet) {
    throw forbidden(
      `test keys cannot access mainnet networks (${network.chain}/${network.network}); use a live key`,
    )
  }
}
