import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { type AddressPolicy, blockedReason, type CidrAllowlist } from './address-policy.ts'
import { bareHost, SafeHttpClient } from './safe-client.ts'

/**
 * The one way Halyard makes HTTP requests to user-supplied URLs (webhook receivers, NFT
 * metadata). Guards against SSRF:
 *  - the host is resolved first and EVERY resolved address is checked (private, loopback,
 *    link-local, CGNAT, IPv4-mapped…, see address-policy.ts); the connection is then made to
 *    the checked address itself (safe-client.ts keeps one keep-alive pool per origin and
 *    address), so a second DNS answer (rebinding) is never used;
 *  - redirects are never followed: a 3xx is returned as a typed `redirect` failure;
 *  - one deadline covers DNS, connect, TLS, headers and body;
 *  - the body is read up to `maxBytes` (fail or truncate, caller's choice).
 * TLS verification is always on; tests trust their self-signed receiver by passing its
 * certificate as `ca` (added to the default roots, for that request's pool only).
 */

export type SafeFetchFailureKind =
  | 'invalid_url'
  | 'blocked_address'
  | 'dns'
  | 'timeout'
  | 'connect'
  | 'tls'
  | 'redirect'
  | 'too_large'
  | 'aborted'

export interface SafeFetchOptions {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  /** Whole-request deadline in ms (default 15 000, the webhook receiver timeout). */
  timeoutMs?: number
  /** Response body cap in bytes (default 1 MiB). */
  maxBytes?: number
  /** On a body larger than maxBytes: `fail` (default) or keep the first maxBytes and set `truncated`. */
  oversize?: 'fail' | 'truncate'
  /** Allow 127.0.0.0/8 and ::1 — dev mode and tests only. */
  allowLoopback?: boolean
  /** Operator-approved CIDR ranges reachable despite being private. */
  allowlist?: CidrAllowlist
  /** URL schemes accepted (default http: and https:). */
  protocols?: readonly string[]
  /** Extra CA certificates (PEM) to trust for this request — for tests' self-signed receivers. */
  ca?: string | Buffer | Array<string | Buffer>
  /** The keep-alive pools to send through (a webhook worker has its own); default: a shared one. */
  client?: SafeHttpClient
  signal?: AbortSignal
  /** DNS resolver override (tests; a custom resolver). Default: the OS resolver via dns.lookup. */
  resolve?: Resolver
}

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>

export interface SafeFetchResponse {
  ok: true
  status: number
  headers: Record<string, string>
  body: Buffer
  truncated: boolean
  /** The IP address actually connected to. */
  address: string
  durationMs: number
}

export interface SafeFetchFailure {
  ok: false
  kind: SafeFetchFailureKind
  message: string
  /** Present for `redirect` (the 3xx status) and `too_large`. */
  status?: number
  /** For `redirect`: the Location header, if any (never followed). */
  location?: string
  durationMs: number
}

export type SafeFetchResult = SafeFetchResponse | SafeFetchFailure

export interface TargetCheck {
  ok: boolean
  /** Why the target is refused (names the host/address). */
  reason?: string
  kind?: SafeFetchFailureKind
  address?: string
  family?: 4 | 6
}

const DEFAULT_TIMEOUT_MS = 15_000
const DEFAULT_MAX_BYTES = 1024 * 1024

/**
 * Resolves `url`'s host and checks every address against the policy. Used at webhook create
 * time and by safeFetch before every request. Returns the first address to pin.
 */
export async function checkTarget(
  url: URL,
  policy: AddressPolicy & { protocols?: readonly string[]; resolve?: Resolver } = {},
): Promise<TargetCheck> {
  const protocols = policy.protocols ?? ['http:', 'https:']
  if (!protocols.includes(url.protocol)) {
    return {
      ok: false,
      kind: 'invalid_url',
      reason: `scheme ${url.protocol} is not allowed (use ${protocols.join(' or ')})`,
    }
  }
  if (url.username || url.password) {
    return { ok: false, kind: 'invalid_url', reason: 'credentials in the URL are not allowed' }
  }
  const host = bareHost(url)
  if (!host) return { ok: false, kind: 'invalid_url', reason: 'URL has no host' }
  let addresses: Array<{ address: string; family: number }>
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }]
  } else {
    try {
      addresses = policy.resolve
        ? await policy.resolve(host)
        : await dnsLookup(host, { all: true, verbatim: true })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error'
      return { ok: false, kind: 'dns', reason: `host ${host} did not resolve (${code})` }
    }
    if (addresses.length === 0) return { ok: false, kind: 'dns', reason: `host ${host} did not resolve` }
  }
  // Every answer must pass: otherwise an attacker mixes one public and one private record.
  for (const a of addresses) {
    const why = blockedReason(a.address, policy)
    if (why !== null) {
      // A name's answers are never repeated: what an internal name resolves to would make the
      // refusal a DNS oracle into the operator's network. A literal is the caller's own.
      const reason = isIP(host) ? why : `host ${host} does not resolve to a public address`
      return {
        ok: false,
        kind: 'blocked_address',
        reason: `${reason}; private and internal targets are refused`,
      }
    }
  }
  const first = addresses[0] as { address: string; family: number }
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 }
}

let sharedClient: SafeHttpClient | undefined

/**
 * checkTarget under the DNS part of the one deadline and the abort signal. An IP literal needs
 * no lookup, so it skips the race (a timer, a promise and a listener per webhook attempt).
 */
async function checkWithin(
  url: URL,
  opts: SafeFetchOptions,
  timeoutMs: number,
): Promise<TargetCheck | 'timeout' | 'aborted'> {
  if (isIP(bareHost(url))) return checkTarget(url, opts)
  let dnsTimer: NodeJS.Timeout | undefined
  let onAbort: (() => void) | undefined
  const check = await Promise.race([
    checkTarget(url, opts),
    new Promise<'timeout' | 'aborted'>((resolve) => {
      dnsTimer = setTimeout(() => resolve('timeout'), timeoutMs)
      onAbort = () => resolve('aborted')
      opts.signal?.addEventListener('abort', onAbort, { once: true })
    }),
  ])
  clearTimeout(dnsTimer)
  if (onAbort) opts.signal?.removeEventListener('abort', onAbort)
  return check
}

export async function safeFetch(input: string | URL, opts: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const fail = (
    kind: SafeFetchFailureKind,
    message: string,
    extra: Partial<SafeFetchFailure> = {},
  ): SafeFetchFailure => ({ ok: false, kind, message, durationMs: elapsed(), ...extra })

  let url: URL
  try {
    url = typeof input === 'string' ? new URL(input) : input
  } catch {
    return fail('invalid_url', 'URL is not valid')
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES
  const deadline = started + timeoutMs
  const timedOut = () => fail('timeout', `no response within ${timeoutMs} ms`)
  if (opts.signal?.aborted) return fail('aborted', 'request aborted')

  const check = await checkWithin(url, opts, timeoutMs)
  if (check === 'timeout') return timedOut()
  if (check === 'aborted') return fail('aborted', 'request aborted')
  if (!check.ok) return fail(check.kind ?? 'blocked_address', check.reason ?? 'target refused')
  // As many connections per origin as callers without their own client ask for at once (NFT
  // metadata: up to a few hundred to one gateway), so a request does not spend its deadline
  // queued behind others.
  sharedClient ??= new SafeHttpClient({ connectionsPerOrigin: 256 })
  const client = opts.client ?? sharedClient
  const res = await client.send(url, check.address as string, {
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    body: opts.body,
    timeoutMs: Math.max(1, deadline - performance.now()),
    maxBytes,
    oversize: opts.oversize ?? 'fail',
    ca: opts.ca,
    signal: opts.signal,
  })
  switch (res.kind) {
    case 'response':
      if (res.status >= 300 && res.status < 400) {
        return fail('redirect', `receiver answered ${res.status} (redirects are not followed)`, {
          status: res.status,
          location: res.headers.location,
        })
      }
      return {
        ok: true,
        status: res.status,
        headers: res.headers,
        body: res.body,
        truncated: res.truncated,
        address: check.address as string,
        durationMs: elapsed(),
      }
    case 'too_large':
      return fail('too_large', `response body exceeds ${maxBytes} bytes`, { status: res.status })
    case 'timeout':
      return timedOut()
    case 'aborted':
      return fail('aborted', 'request aborted')
    case 'tls':
      return fail('tls', `TLS error: ${res.detail}`)
    case 'connect':
      return fail('connect', `connection failed: ${res.detail}`)
  }
}
