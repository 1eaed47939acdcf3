import type { IncomingMessage } from 'node:http'

/**
 * The client address the access decision sees (a key's allowed-IPs list): today the TCP peer,
 * IPv4-mapped IPv6 (`::ffff:127.0.0.1`) written as the IPv4 address it is. The one place that
 * knows where a client's address comes from: a deployment behind a proxy swaps in an address
 * read from the proxy's forwarding header here, and every transport follows.
 */
export function peerAddress(req: IncomingMessage): string | undefined {
  const a = req.socket.remoteAddress
  if (a === undefined) return undefined
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a
}
