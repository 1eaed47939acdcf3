import { BlockList, isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Which IP addresses an outbound request made on a user's behalf (webhook delivery, NFT
 * metadata fetch) may reach. Checked on the *resolved* address, so a public hostname that
 * resolves to 10.0.0.1 is refused like the literal.
 *
 * Only global unicast passes. Ranges come from ipaddr.js, which tracks the IANA IPv4 and IPv6
 * special-purpose registries, plus what it lacks (EXTRA_V6); IPv6 outside 2000::/3 is not
 * allocated as global unicast. IPv6 forms that carry an IPv4 (mapped, SIIT, NAT64, 6to4,
 * Teredo) are judged by that IPv4, since a translator or tunnel delivers to it: the metadata
 * service behind 64:ff9b::a9fe:a9fe is still the metadata service.
 */

const V4_LABELS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  as112: 'AS112 (reserved)',
  amt: 'AMT (reserved)',
}

const V6_LABELS: Record<string, string> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'private (unique local)',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard',
  benchmarking: 'benchmarking',
  amt: 'AMT (reserved)',
  as112v6: 'AS112 (reserved)',
  deprecatedOrchid: 'ORCHID (reserved)',
  orchid2: 'ORCHIDv2 (reserved)',
  droneRemoteIdProtocolEntityTags: 'DRIP (reserved)',
  segmentRouting: 'segment-routing SID (reserved)',
  reserved: 'reserved',
}

/** IANA special-purpose IPv6 ranges ipaddr.js 2.5 does not list. */
const EXTRA_V6: Array<[ipaddr.IPv6, number, string]> = [
  [ipaddr.IPv6.parse('100:0:0:1::'), 64, 'dummy prefix (reserved)'], // RFC 9780
]
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse('2000::')

/** An operator allowlist of CIDR ranges (e.g. an internal receiver at 10.1.2.0/24). */
export class CidrAllowlist {
  private readonly list = new BlockList()
  readonly size: number

  constructor(cidrs: readonly string[] = []) {
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr)
      if (!parsed) throw new Error(`invalid CIDR range "${cidr}"`)
      this.list.addSubnet(parsed.address, parsed.prefix, parsed.family)
    }
    this.size = cidrs.length
  }

  has(ip: string): boolean {
    if (this.size === 0) return false
    const family = isIP(ip)
    if (family === 0) return false
    return this.list.check(ip, family === 4 ? 'ipv4' : 'ipv6')
  }
}

export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address, prefixText, ...rest] = cidr.trim().split('/')
  if (!address || rest.length > 0) return null
  const family = isIP(address)
  if (family === 0) return null
  const max = family === 4 ? 32 : 128
  const prefix = prefixText === undefined ? max : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null
  return { address, prefix, family: family === 4 ? 'ipv4' : 'ipv6' }
}

/** An IPv6 form that carries IPv4 addresses, and the addresses it carries. */
export interface EmbeddedIpv4 {
  form: 'IPv4-mapped' | 'SIIT' | 'IPv4-compatible' | 'NAT64' | 'local-use NAT64' | '6to4' | 'Teredo'
  /** One address; Teredo's server and client; empty when the form does not say where it sits. */
  ipv4: string[]
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`

/** The IPv4 carried by an IPv6 address (as `isIP` accepts it), or null when it carries none. */
export function embeddedIpv4(ip: string): EmbeddedIpv4 | null {
  if (isIP(ip) !== 6) return null
  return embeddedIn(parseIpv6(ip))
}

/**
 * `ip` (valid per `isIP`) as ipaddr.js's IPv6. Not through its string parser: that reads
 * `::a.b.c.d` as `::ffff:a.b.c.d`, but the socket layer reads it as `::` + 32 bits (the
 * IPv4-compatible form), so the dotted tail is turned into two hex groups first. The zone
 * (`%eth0`) does not change which range an address is in.
 */
function parseIpv6(ip: string): ipaddr.IPv6 {
  const zone = ip.indexOf('%')
  let text = zone >= 0 ? ip.slice(0, zone) : ip
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  return ipaddr.IPv6.parse(text)
}

function embeddedIn(addr: ipaddr.IPv6): EmbeddedIpv4 | null {
  const p = addr.parts as [number, number, number, number, number, number, number, number]
  const last32 = [v4Of(p[6], p[7])]
  switch (addr.range() as string) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
      return { form: 'IPv4-mapped', ipv4: last32 }
    case 'rfc6145': // ::ffff:0:a.b.c.d (RFC 6145 IPv4-translated)
      return { form: 'SIIT', ipv4: last32 }
    case 'rfc6052':
      // 64:ff9b::/96 has one layout. The local-use 64:ff9b:1::/48 (RFC 8215) may put the IPv4
      // at any RFC 6052 offset after the operator's subnet bits; only 64:ff9b:1::/96 (what
      // DNS64 synthesizes with that prefix) is unambiguous, anything else is refused unread.
      if (p[2] === 0) return { form: 'NAT64', ipv4: last32 }
      return { form: 'local-use NAT64', ipv4: p[3] === 0 && p[4] === 0 && p[5] === 0 ? last32 : [] }
    case '6to4': // 2002:AABB:CCDD::/48
      return { form: '6to4', ipv4: [v4Of(p[1], p[2])] }
    case 'teredo': // 2001:0:server(32):flags:port:client XOR 0xffffffff (RFC 4380)
      return { form: 'Teredo', ipv4: [v4Of(p[2], p[3]), v4Of(p[6] ^ 0xffff, p[7] ^ 0xffff)] }
  }
  // ::a.b.c.d (RFC 4291 IPv4-compatible, deprecated); :: and ::1 are themselves, not this.
  if (p.slice(0, 6).every((g) => g === 0) && !(p[6] === 0 && p[7] <= 1)) {
    return { form: 'IPv4-compatible', ipv4: last32 }
  }
  return null
}

export interface AddressPolicy {
  /** Allow 127.0.0.0/8 and ::1 (dev mode and tests only). */
  allowLoopback?: boolean
  /** Operator-approved ranges that are reachable even though they are private. */
  allowlist?: CidrAllowlist
}

/** Why `ip` may not be contacted, or null when it may. */
export function blockedReason(ip: string, policy: AddressPolicy = {}): string | null {
  const family = isIP(ip)
  if (family === 0) return `"${ip}" is not an IP address`
  if (policy.allowlist?.has(ip)) return null
  if (family === 4) return v4Reason(ip, policy.allowLoopback === true)
  const addr = parseIpv6(ip)
  const inner = embeddedIn(addr)
  return inner ? embeddedReason(ip, inner, policy) : v6Reason(ip, addr, policy.allowLoopback === true)
}

function v4Reason(ip: string, allowLoopback: boolean): string | null {
  const range = ipaddr.IPv4.parse(ip).range() as string
  if (range === 'unicast' || (range === 'loopback' && allowLoopback)) return null
  return `${ip} is a ${V4_LABELS[range] ?? range} address`
}

function v6Reason(ip: string, addr: ipaddr.IPv6, allowLoopback: boolean): string | null {
  const range = addr.range() as string
  if (range === 'loopback' && allowLoopback) return null
  if (range !== 'unicast') return `${ip} is a ${V6_LABELS[range] ?? range} address`
  for (const [net, bits, label] of EXTRA_V6) if (addr.match(net, bits)) return `${ip} is a ${label} address`
  if (!addr.match(GLOBAL_UNICAST_V6, 3)) return `${ip} is not a global unicast address`
  return null
}

/**
 * An IPv6 address carrying IPv4 passes only when every IPv4 it carries would. The mapped form
 * is the IPv4 address itself on a dual-stack socket, so the loopback allowance and the
 * operator allowlist apply to it; through a translator or tunnel they do not (the loopback a
 * NAT64 gateway reaches is its own, and an allowlisted range is allowed as such, not via relays).
 */
function embeddedReason(ip: string, inner: EmbeddedIpv4, policy: AddressPolicy): string | null {
  const mapped = inner.form === 'IPv4-mapped'
  if (inner.ipv4.length === 0) return `${ip} is a ${inner.form} address with no recognizable IPv4 in it`
  for (const v4 of inner.ipv4) {
    if (mapped && policy.allowlist?.has(v4)) continue
    const why = v4Reason(v4, mapped && policy.allowLoopback === true)
    if (why !== null) return `${why} (IPv4 embedded in ${mapped ? 'IPv6' : `${inner.form} address`} ${ip})`
  }
  if (inner.form === 'IPv4-compatible') return `${ip} is a deprecated IPv4-compatible address`
  return null
}
