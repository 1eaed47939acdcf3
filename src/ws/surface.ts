import type { Network, NetworkRegistry } from '../chains/registry.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import { parseWsPath } from './routes.ts'

/**
 * A URL family the WebSocket endpoint accepts upgrades on: Halyard's own `/v1/ws/{chain}/{network}`,
 * and roots other features add (the Alchemy-compatible root, src/alchemy/ws.ts). Connections on
 * every surface share the service's limits, charging and upstream streams; a surface decides
 * the path, where the key is, the methods, the subscription kinds and the subprotocol.
 */
export interface WsSurface {
  /** The path's route on this surface, or undefined when the path is not this surface's. */
  match(pathname: string): WsRoute | undefined
  /** The surface's JSON-RPC methods; the network kind's registry by default. */
  readonly registry?: MethodRegistry
  /** Serves Alchemy's transaction subscription kinds too. */
  readonly alchemyKinds?: boolean
  /**
   * The subprotocol to echo from those the client offers, or false for none. Without this, the
   * ws library's default (the first one offered).
   */
  protocol?(offered: ReadonlySet<string>): string | false
  /** How to reach it, for the 404 of a path no surface knows. */
  readonly hint: string
}

export interface WsRoute {
  /** The key the path itself carries; it wins over headers and `?apiKey=`. */
  readonly pathKey?: string
  /** The network the path names; throws the 404 naming it. */
  network(networks: NetworkRegistry): Network
}

export const HALYARD_WS: WsSurface = {
  hint: '/v1/ws/{chain}/{network}',
  match(pathname) {
    const path = parseWsPath(pathname)
    if (!path) return undefined
    return { network: (networks) => networks.get(path.chain, path.network) }
  },
}
