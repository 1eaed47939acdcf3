import ipaddr from 'ipaddr.js'
import { isAddress } from 'viem'
import { invalidRequest } from '../errors.ts'

/**
 * Per-key allowlists, as browser-facing providers offer them (docs/browser.md): the
 * origins (RFC 6454) a key may be used from, the client addresses (IPv4/IPv6, single or CIDR),
 * the contract addresses its calls may touch and the JSON-RPC methods it may call. An empty
 * list is no restriction. Entries are validated and normalised here, once, when a key is
 * created or updated; the auth cache compiles them (`compileAllowlists`) so that a request pays
 * a Set lookup or a few prefix matches, never a parse.
 */

export const ALLOWLIST_NAMES = ['origins', 'ips', 'contracts', 'methods'] as const
export type AllowlistName = (typeof ALLOWLIST_NAMES)[number]

/** Lists as stored and shown (`allowed_origins` …): normalised entries. */
export type AllowlistValues = Record<AllowlistName, readonly string[]>

/** How many entries each list may hold: enough for real apps, bounded for the cache and the check. */
export const ALLOWLIST_LIMITS: Record<AllowlistName, number> = {
  origins: 100,
  ips: 100,
  contracts: 1000,
  methods: 300,
}

/** The wire name of each list (admin API, dashboard form, CLI flag without the `--`). */
export const ALLOWLIST_FIELDS: Record<AllowlistName, string> = {
  origins: 'allowed_origins',
  ips: 'allowed_ips',
  contracts: 'allowed_contracts',
  methods: 'allowed_methods',
}

const MAX_ENTRY = 253
const HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/
const METHOD = /^[A-Za-z][A-Za-z0-9_]{0,99}$/

/** Whether the server knows a JSON-RPC method name (wired from the method registries). */
export type KnownMethod = (name: string) => boolean

/** `https://app.example.com`, `http://localhost:5173`, `*.example.com`, `https://*.example.com`. */
function normaliseOrigin(entry: string): string | undefined {
  const m = /^(?:(https?):\/\/)?(\*\.)?([^/:]+)(?::(\d{1,5}))?\/?$/.exec(entry.toLowerCase())
  if (!m) return undefined
  const [, scheme, wildcard, host, port] = m
  if (!HOST.test(host!) && !(host!.startsWith('[') && host!.endsWith(']'))) return undefined
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return undefined
  if (wildcard) return `${scheme ? `${scheme}://` : ''}*.${host}`
  // An exact entry is an origin: it needs its scheme, and the default port is dropped as the
  // browser drops it from the Origin header.
  if (!scheme) return undefined
  const defaultPort = scheme === 'https' ? '443' : '80'
  return `${scheme}://${host}${port !== undefined && port !== defaultPort ? `:${Number(port)}` : ''}`
}

function normaliseIp(entry: string): string | undefined {
  try {
    if (entry.includes('/')) {
      const [addr, bits] = ipaddr.parseCIDR(entry)
      // The network address, so `10.1.2.3/8` is stored as the range it means: `10.0.0.0/8`.
      const network =
        addr.kind() === 'ipv4'
          ? ipaddr.IPv4.networkAddressFromCIDR(entry)
          : ipaddr.IPv6.networkAddressFromCIDR(entry)
      return `${network.toString()}/${bits}`
    }
    if (!ipaddr.isValid(entry)) return undefined
    return ipaddr.process(entry).toString()
  } catch {
    return undefined
  }
}

/**
 * Validates and normalises one list: each entry trimmed, checked, de-duplicated; the first bad
 * entry is a 400 naming the list and the entry. An empty list clears it.
 */
export function parseAllowlist(
  name: AllowlistName,
  entries: readonly string[],
  knownMethod: KnownMethod,
): string[] {
  const field = ALLOWLIST_FIELDS[name]
  const out = new Set<string>()
  for (const raw of entries) {
    const entry = raw.trim()
    if (entry === '') continue
    const shown = JSON.stringify(entry.slice(0, 100))
    if (entry.length > MAX_ENTRY) throw invalidRequest(`${field}: entry ${shown}… is too long`)
    let value: string | undefined
    let why: string
    switch (name) {
      case 'origins':
        value = normaliseOrigin(entry)
        why =
          'is not an origin (https://app.example.com, http://localhost:5173) or a wildcard (*.example.com)'
        break
      case 'ips':
        value = normaliseIp(entry)
        why = 'is not an IPv4/IPv6 address or CIDR range (203.0.113.7, 10.0.0.0/8, 2001:db8::/32)'
        break
      case 'contracts':
        value = isAddress(entry, { strict: true }) ? entry.toLowerCase() : undefined
        why = 'is not a 20-byte hex address (0x…, with a valid EIP-55 checksum if mixed case)'
        break
      case 'methods':
        value = METHOD.test(entry) && knownMethod(entry) ? entry : undefined
        why = 'is not a JSON-RPC method this server knows'
        break
    }
    if (value === undefined) throw invalidRequest(`${field}: entry ${shown} ${why}`)
    out.add(value)
  }
  if (out.size > ALLOWLIST_LIMITS[name])
    throw invalidRequest(`${field}: at most ${ALLOWLIST_LIMITS[name]} entries (got ${out.size})`)
  return [...out]
}

/** Splits a comma- or whitespace-separated list (CLI flags, the dashboard's text areas). */
export function splitList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)
}

/** An origin list, compiled: exact origins in a Set, wildcards as host suffixes. */
export interface OriginList {
  readonly exact: ReadonlySet<string>
  readonly wildcards: readonly { readonly scheme: string | undefined; readonly suffix: string }[]
}

export interface IpList {
  readonly v4: readonly [ipaddr.IPv4, number][]
  readonly v6: readonly [ipaddr.IPv6, number][]
}

/** A key's lists, ready for the access decision (http/access-decision.ts). Absent list = unrestricted. */
export interface KeyAllowlists {
  readonly origins?: OriginList
  readonly ips?: IpList
  readonly contracts?: ReadonlySet<string>
  readonly methods?: ReadonlySet<string>
}

/**
 * Compiles stored lists; undefined when none is set (the common key: the decision then skips
 * every list with one check). Stored entries were validated on write; one that no longer
 * parses (never expected) is dropped from an IP list rather than failing authentication.
 */
export function compileAllowlists(v: AllowlistValues): KeyAllowlists | undefined {
  const { origins, ips, contracts, methods } = v
  if (origins.length + ips.length + contracts.length + methods.length === 0) return undefined
  const out: {
    origins?: OriginList
    ips?: IpList
    contracts?: ReadonlySet<string>
    methods?: ReadonlySet<string>
  } = {}
  if (origins.length > 0) {
    const exact = new Set<string>()
    const wildcards: { scheme: string | undefined; suffix: string }[] = []
    for (const o of origins) {
      const star = o.indexOf('*.')
      if (star < 0) exact.add(o)
      else wildcards.push({ scheme: star > 0 ? o.slice(0, star - 3) : undefined, suffix: o.slice(star + 1) })
    }
    out.origins = { exact, wildcards }
  }
  if (ips.length > 0) {
    const v4: [ipaddr.IPv4, number][] = []
    const v6: [ipaddr.IPv6, number][] = []
    for (const entry of ips) {
      try {
        const [addr, bits] = entry.includes('/')
          ? ipaddr.parseCIDR(entry)
          : [ipaddr.parse(entry), entry.includes(':') ? 128 : 32]
        if (addr.kind() === 'ipv4') v4.push([addr as ipaddr.IPv4, bits])
        else v6.push([addr as ipaddr.IPv6, bits])
      } catch {}
    }
    out.ips = { v4, v6 }
  }
  if (contracts.length > 0) out.contracts = new Set(contracts)
  if (methods.length > 0) out.methods = new Set(methods)
  return out
}

/** Whether an Origin header value is on the list (exact, or a subdomain of a wildcard's domain). */
export function originAllowed(list: OriginList, origin: string | undefined): boolean {
  if (origin === undefined) return false
  if (list.exact.has(origin)) return true
  if (list.wildcards.length === 0) return false
  const sep = origin.indexOf('://')
  if (sep < 0) return false
  const scheme = origin.slice(0, sep)
  const rest = origin.slice(sep + 3)
  const colon = rest.lastIndexOf(':')
  const host = colon > 0 && !rest.endsWith(']') ? rest.slice(0, colon) : rest
  for (const w of list.wildcards) {
    if (w.scheme !== undefined && w.scheme !== scheme) continue
    // `*.example.com` is every subdomain, at any depth, but not example.com itself.
    if (host.length > w.suffix.length && host.endsWith(w.suffix)) return true
  }
  return false
}

/** Whether a client address (already normalised by http/peer.ts) is on the list. */
export function ipAllowed(list: IpList, address: string | undefined): boolean {
  if (address === undefined || !ipaddr.isValid(address)) return false
  const addr = ipaddr.process(address)
  if (addr.kind() === 'ipv4') return list.v4.some(([net, bits]) => (addr as ipaddr.IPv4).match(net, bits))
  return list.v6.some(([net, bits]) => (addr as ipaddr.IPv6).match(net, bits))
}
