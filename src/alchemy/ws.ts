import type { FastifyInstance } from 'fastify'
import { invalidRequest, notFound } from '../errors.ts'
import { defineRoute } from '../http/route.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import type { WsSurface } from '../ws/surface.ts'
import { ALCHEMY_ALIAS, ALCHEMY_V2, alchemyRootParams } from './paths.ts'

/**
 * The WebSocket side of the Alchemy-compatible root: the upgrade at the JSON-RPC URL itself
 * (`/v1/alchemy/{network}/v2/{key}`), as alchemy-sdk opens it. The connection is the WebSocket
 * endpoint's (limits, charging, shared upstream streams); this surface gives it the key from
 * the path, the compat root's methods, Alchemy's transaction subscriptions and the subprotocol echo.
 */

/** `/v1/alchemy/{network}/v2/{key}` with an optional trailing slash. */
const ALCHEMY_WS_PATH = /^\/v1\/alchemy\/([^/?#]+)\/v2\/([^/?#]+)\/?$/

/** Longest network name looked up (alchemyRootParams allows no more on HTTP either). */
const MAX_NETWORK_NAME = 64

/**
 * alchemy-sdk offers `alchemy-sdk-<version>` and drops the connection unless it is echoed; other
 * clients offer none. Of several, the first alchemy-sdk one; anything else is not echoed, since
 * Halyard speaks no other subprotocol.
 */
export function alchemyProtocol(offered: ReadonlySet<string>): string | false {
  for (const p of offered) if (p.startsWith('alchemy-sdk-')) return p
  return false
}

export function alchemyWsSurface(registry: MethodRegistry): WsSurface {
  return {
    hint: '/v1/alchemy/{network}/v2/{key}',
    registry,
    alchemyKinds: true,
    protocol: alchemyProtocol,
    match(pathname) {
      const m = ALCHEMY_WS_PATH.exec(pathname)
      if (!m) return undefined
      let name: string
      let key: string
      try {
        name = decodeURIComponent(m[1]!)
        key = decodeURIComponent(m[2]!)
      } catch {
        // A key is still in the path: the 404's message goes through redactUrl.
        return undefined
      }
      return {
        pathKey: key,
        network(networks) {
          if (name.length > MAX_NETWORK_NAME)
            throw notFound(`network ${name.slice(0, MAX_NETWORK_NAME)}… is not configured`)
          return networks.getByAlias(name)
        },
      }
    },
  }
}

/** A plain GET (no upgrade) at the root: authenticated like the POST, then told what it is for. */
export function registerAlchemyWsRoute(app: FastifyInstance): void {
  defineRoute(app, {
    method: 'GET',
    url: ALCHEMY_V2,
    summary: 'Alchemy-compatible WebSocket endpoint',
    description:
      "Upgrade to a WebSocket at the same URL as the Alchemy-compatible JSON-RPC root (key in the path), with Alchemy's subscriptions. A plain GET without the upgrade is refused with 400 saying so.",
    scope: 'any-key',
    cost: 1,
    network: { from: 'alias', param: ALCHEMY_ALIAS.param, kinds: ['evm'] },
    keyInPath: ALCHEMY_ALIAS.keyParam,
    websocket: true,
    what: 'the Alchemy-compatible WebSocket endpoint',
    schema: { params: alchemyRootParams },
    handler: () => {
      throw invalidRequest(
        'this URL takes JSON-RPC as a POST, or a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)',
      )
    },
  })
}
