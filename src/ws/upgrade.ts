import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { AuthService, Caller } from '../auth/service.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { HalyardError, invalidRequest, notFound } from '../errors.ts'
import { keyFrom } from '../http/access.ts'
import { decideRequest, refusalError } from '../http/access-decision.ts'
import { rateLimitHeaders } from '../http/charge.ts'
import { endWithError } from '../http/errors.ts'
import type { ClientAddress } from '../http/peer.ts'
import { newRequestId } from '../http/request-id.ts'
import type { LimitDecision } from '../limits/limiter.ts'
import { redactUrl } from '../logger.ts'
import type { WsRoute, WsSurface } from './surface.ts'

export interface UpgradeDeps {
  readonly auth: AuthService
  readonly networks: NetworkRegistry
  /** The client's address for the allowed-IPs list (http/peer.ts). */
  readonly clientAddress: ClientAddress
  /** Tried in order; the first whose path matches answers. */
  readonly surfaces: readonly WsSurface[]
}

const WS_KEY = /^[+/0-9A-Za-z]{22}==$/

/**
 * The handshake itself (RFC 6455 4.2.1), checked before the key is charged for a connection:
 * otherwise the ws library would refuse it later with its own HTML answer.
 */
function checkHandshake(req: IncomingMessage): void {
  if (req.method !== 'GET') throw invalidRequest(`a WebSocket upgrade must be a GET, not ${req.method}`)
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    throw invalidRequest('the Upgrade header must be "websocket"')
  const key = req.headers['sec-websocket-key']
  if (typeof key !== 'string' || !WS_KEY.test(key.trim()))
    throw invalidRequest('missing or invalid Sec-WebSocket-Key header')
  const version = req.headers['sec-websocket-version']
  if (version !== '13' && version !== '8')
    throw new HalyardError('invalid_request', 'unsupported Sec-WebSocket-Version; use 13', {
      'sec-websocket-version': '13, 8',
    })
}

/**
 * Decides an upgrade request before any WebSocket exists, in the HTTP order: unknown path 404,
 * key 401, network 404, then the access decision (allowed IPs and origins, test key on mainnet,
 * scope: 403). Throws the HalyardError to answer.
 */
export async function authorizeUpgrade(
  req: IncomingMessage,
  deps: UpgradeDeps,
): Promise<{ caller: Caller; network: Network; surface: WsSurface; key: string }> {
  checkHandshake(req)
  const url = new URL(req.url ?? '/', 'http://halyard.invalid')
  let found: { surface: WsSurface; route: WsRoute } | undefined
  for (const surface of deps.surfaces) {
    const route = surface.match(url.pathname)
    if (route) {
      found = { surface, route }
      break
    }
  }
  if (!found) {
    // The path may carry a key (a mistyped Alchemy-compatible URL): never repeat it.
    throw notFound(
      `no route GET ${redactUrl(url.pathname)} for a WebSocket upgrade; use ${deps.surfaces.map((s) => s.hint).join(' or ')}`,
    )
  }
  const { surface, route } = found
  const key = route.pathKey ?? keyFrom(req.headers, url.searchParams.get('apiKey'))
  const caller = await deps.auth.authenticate(key)
  const network = route.network(deps.networks)
  if (network.kind !== 'evm') {
    throw notFound(`WebSocket subscriptions are not available on ${network.chain}/${network.network}`)
  }
  // Browsers always send Origin on an upgrade (RFC 6455 4.1): a key's allowed origins and IPs
  // hold here as on HTTP; its allowed methods and contracts hold per message (ws/connection.ts).
  const refused = decideRequest({
    caller,
    network,
    scope: 'rpc:read',
    what: 'WebSocket subscriptions',
    origin: req.headers.origin,
    ip: deps.clientAddress(req),
  })
  if (refused) throw refusalError(refused)
  // authenticate() refused a missing key: `key` is the one the caller was resolved from.
  return { caller, network, surface, key: key as string }
}

/** Answers a refused upgrade over plain HTTP with the JSON error body, then closes. */
export function refuseUpgrade(socket: Duplex, err: unknown, decision?: LimitDecision): void {
  const e =
    err instanceof HalyardError
      ? err
      : new HalyardError('internal_error', 'internal error; retry with exponential backoff')
  endWithError(socket, e, { 'x-request-id': newRequestId(), ...(decision ? rateLimitHeaders(decision) : {}) })
}
