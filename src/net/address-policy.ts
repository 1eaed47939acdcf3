import { BlockList, isIP } from 'node:net'

/**
 * Which IP addresses an outbound request made on a user's behalf (webhook delivery, NFT
 * metadata fetch) may reach. Checked on the *resolved* address, so a public hostname that
 * resolves to 10.0.0.1 is refused like the literal. Ranges follow Svix's SSRF guard: private,
 * loopback, link-local, CGNAT, reserved/documentation, multicast, and IPv6 equivalents;
 * IPv4-mapped and NAT64/6to4 IPv6 forms are unwrapped to the IPv4 they carry.
 */

const BLOCKED_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
]

const BLOCKED_V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'reserved (IPv4-compatible)'],
  ['100::', 64, 'discard'],
  ['2001:db8::', 32, 'documentation'],
  ['2001::', 23, 'reserved'],
  ['fc00::', 7, 'private (unique local)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
]

/** a.b.c.d (as isIP accepts it: no leading zeros) as an unsigned 32-bit number. */
function ipv4Number(ip: string): number {
  const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number]
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0
}

// IPv4 ranges as masks: a webhook worker checks the receiver's address before every attempt,
// and BlockList.check allocates a SocketAddress per range (~13 µs per attempt for this list).
const v4Ranges = BLOCKED_V4.map(([net, prefix, label]) => {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0
  return { base: (ipv4Number(net) & mask) >>> 0, mask, label }
})
const v6Lists = BLOCKED_V6.map(([net, prefix, label]) => {
  const list = new BlockList()
  list.addSubnet(net, prefix, 'ipv6')
  return { list, label }
})

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

/** Returns the IPv4 carried by an IPv4-mapped (::ffff:a.b.c.d), NAT64 or 6to4 address, else null. */
export function embeddedIpv4(ipv6: string): string | null {
  const groups = expandIpv6(ipv6)
  if (!groups) return null
  const v4From = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0)
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (deprecated compatible form)
  if (zeros(0, 5) && (groups[5] === 0xffff || groups[5] === 0) && !(groups[5] === 0 && groups[6] === 0)) {
    return v4From(groups[6] as number, groups[7] as number)
  }
  // 64:ff9b::/96 NAT64
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) {
    return v4From(groups[6] as number, groups[7] as number)
  }
  // 2002::/16 6to4 carries the IPv4 in groups 1-2
  if (groups[0] === 0x2002) return v4From(groups[1] as number, groups[2] as number)
  return null
}

function expandIpv6(ip: string): number[] | null {
  let text = ip.toLowerCase()
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  // A trailing dotted quad becomes two hex groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return null
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)))
  const head = parse(halves[0] ?? '')
  const tail = halves.length === 2 ? parse(halves[1] ?? '') : []
  const fill = 8 - head.length - tail.length
  if (halves.length === 1 && head.length !== 8) return null
  if (fill < 0) return null
  const groups = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail]
  return groups.some((g) => Number.isNaN(g) || g < 0 || g > 0xffff) ? null : groups
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
  if (family === 6) {
    const inner = embeddedIpv4(ip)
    if (inner !== null) {
      const why = blockedReason(inner, policy)
      return why === null ? null : `${why} (IPv4 embedded in IPv6 ${ip})`
    }
    if (policy.allowLoopback && expandIpv6(ip)?.every((g, i) => g === (i === 7 ? 1 : 0))) return null
    for (const { list, label } of v6Lists) if (list.check(ip, 'ipv6')) return `${ip} is a ${label} address`
    return null
  }
  const n = ipv4Number(ip)
  for (const { base, mask, label } of v4Ranges) {
    if ((n & mask) >>> 0 !== base) continue
    if (label === 'loopback' && policy.allowLoopback) return null
    return `${ip} is a ${label} address`
  }
  if (ip === '255.255.255.255') return `${ip} is a broadcast address`
  return null
}
