import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import { CidrAllowlist } from './address-policy.ts'

/**
 * Who is on the other end of a request, when reverse proxies may sit in front
 * (docs/behind-a-proxy.md). `X-Forwarded-For` and `X-Forwarded-Proto` are believed only from a
 * TCP peer inside HALYARD_TRUSTED_PROXIES; from anyone else they are ignored, since any client
 * can send them. With no trusted proxies (the default) the client is the TCP peer.
 *
 * Used by every transport: Fastify routes pass `request.raw`, the JSON-RPC fast lane and
 * WebSocket upgrades pass their `IncomingMessage` as it is.
 */

/** What the functions read of a request: Node's `IncomingMessage` (Fastify's `request.raw`) fits. */
export interface PeerRequest {
  readonly socket: { readonly remoteAddress?: string | undefined; readonly encrypted?: boolean }
  readonly headers: IncomingHttpHeaders
}

export interface Forwarded {
  /**
   * The client's IP address: the TCP peer, or — when the peer is a trusted proxy — the
   * X-Forwarded-For entries walked from the right (each proxy appends the address it saw),
   * skipping trusted hops; the first untrusted entry is the client (as the proxy-addr package
   * does). IPv4-mapped IPv6 (`::ffff:10.0.0.1`) comes back as IPv4. Never throws. A malformed
   * entry reached by the walk stops it: the hop that forwarded it is answered instead, so a
   * client can never choose an arbitrary string. '' only when the socket has no address
   * (already closed).
   */
  clientAddress(req: PeerRequest): string
  /** 'https' when the socket is TLS, or a trusted proxy's X-Forwarded-Proto (its last value) says so. */
  requestProtocol(req: PeerRequest): 'http' | 'https'
  /** Whether an address is one of the trusted proxies (Fastify's `trustProxy` function). */
  trusts(address: string): boolean
}

/** Builds the functions once from the configured list (CIDR ranges or single addresses). */
export function forwarded(trustedProxies: readonly string[]): Forwarded {
  const list = new CidrAllowlist(trustedProxies)
  const trusts = (address: string) => list.size > 0 && list.has(unmapped(address))

  return {
    trusts,
    clientAddress(req) {
      let hop = unmapped(req.socket.remoteAddress ?? '')
      if (!trusts(hop)) return hop
      const chain = headerList(req.headers['x-forwarded-for'])
      for (let i = chain.length - 1; i >= 0; i--) {
        const next = unmapped(chain[i] as string)
        if (isIP(next) === 0) return hop
        hop = next
        if (!trusts(hop)) return hop
      }
      return hop
    },
    requestProtocol(req) {
      if (req.socket.encrypted) return 'https'
      if (!trusts(unmapped(req.socket.remoteAddress ?? ''))) return 'http'
      // The nearest proxy's word: it appends (or sets) the scheme its client used.
      const said = headerList(req.headers['x-forwarded-proto']).at(-1)?.toLowerCase()
      return said === 'https' ? 'https' : 'http'
    },
  }
}

/** A header's comma-separated values, repeated headers joined, empty entries dropped. */
function headerList(value: string | string[] | undefined): string[] {
  if (value === undefined) return []
  const joined = Array.isArray(value) ? value.join(',') : value
  return joined
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

/** `::ffff:a.b.c.d` as `a.b.c.d`: a dual-stack listener reports IPv4 peers that way. */
function unmapped(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  return m ? (m[1] as string) : address
}
