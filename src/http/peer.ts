import type { PeerRequest } from '../net/forwarded.ts'

/**
 * The client address the access decision sees (a key's allowed-IPs list): the TCP peer, or,
 * behind a proxy named in HALYARD_TRUSTED_PROXIES, the client it forwarded for
 * (net/forwarded.ts, docs/behind-a-proxy.md). Every transport (Fastify routes, the JSON-RPC fast
 * lane, WebSocket upgrades) is handed the same function, built once from the configuration.
 */
export type ClientAddress = (req: PeerRequest) => string
