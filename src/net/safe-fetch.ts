import { lookup as dnsLookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { type AddressPolicy, blockedReason, type CidrAllowlist } from './address-policy.ts'

/**
 * The one way Halyard makes HTTP requests to user-supplied URLs (webhook receivers, NFT
 * metadata). Guards against SSRF:
 *  - the host is resolved first and EVERY resolved address is checked (private, loopback,
 *    link-local, CGNAT, IPv4-mapped…, see address-policy.ts); the connection is then pinned to
 *    the checked address through a custom `lookup`, so a second DNS answer (rebinding) is
 *    never used;
 *  - redirects are never followed: a 3xx is returned as a typed `redirect` failure;
 *  - one deadline covers DNS, connect, TLS, headers and body;
 *  - the body is read up to `maxBytes` (fail or truncate, caller's choice).
 * TLS verification is always on; tests trust their self-signed receiver by passing its
 * certificate as `ca` (added to, not replacing, the trust decision for that request only).
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
  /** Whole-request deadline in ms (default 15 000, the spec's webhook timeout). */
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
  /** Optional keep-alive agent (must match the URL's protocol); sockets it opens use our pinned lookup. */
  agent?: http.Agent
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
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
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
      const via = isIP(host) ? '' : `host ${host} resolves to `
      return {
        ok: false,
        kind: 'blocked_address',
        reason: `${via}${why}; private and internal targets are refused`,
      }
    }
  }
  const first = addresses[0] as { address: string; family: number }
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 }
}

export async function safeFetch(input: string | URL, opts: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const fail = (
    kind: SafeFetchFailureKind,
    message: string,
    extra: Partial<SafeFetchFailure> = {},
  ): SafeFetchFailure => ({
    ok: false,
    kind,
    message,
    durationMs: elapsed(),
    ...extra,
  })

  let url: URL
  try {
    url = typeof input === 'string' ? new URL(input) : input
  } catch {
    return fail('invalid_url', 'URL is not valid')
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES

  // One deadline for everything, DNS included. A timer and a destroy() instead of an
  // AbortSignal handed to http.request: the signal's listeners cost about a quarter of a
  // request's CPU to a fast receiver, which a webhook worker sending thousands a second pays.
  const cut: Cut = { reason: undefined, cancel: undefined }
  const stop = (reason: 'timeout' | 'aborted') => {
    if (cut.reason) return
    cut.reason = reason
    cut.cancel?.()
  }
  const timer = setTimeout(() => stop('timeout'), timeoutMs)
  const onOuterAbort = () => stop('aborted')
  if (opts.signal?.aborted) stop('aborted')
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true })
  const cutFailure = () =>
    cut.reason === 'aborted'
      ? fail('aborted', 'request aborted')
      : fail('timeout', `no response within ${timeoutMs} ms`)
  try {
    const check = await Promise.race([
      checkTarget(url, opts),
      new Promise<TargetCheck>((resolve) => {
        cut.cancel = () => resolve({ ok: false, kind: 'timeout', reason: 'DNS lookup timed out' })
      }),
    ])
    cut.cancel = undefined
    if (cut.reason) return cutFailure()
    if (!check.ok) return fail(check.kind ?? 'blocked_address', check.reason ?? 'target refused')
    return await request(
      url,
      check.address as string,
      check.family as 4 | 6,
      opts,
      cut,
      cutFailure,
      maxBytes,
      fail,
      elapsed,
    )
  } finally {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', onOuterAbort)
  }
}

/** Why a request was cut short (set once), and how to cut the part under way. */
interface Cut {
  reason: 'timeout' | 'aborted' | undefined
  cancel: (() => void) | undefined
}

function request(
  url: URL,
  address: string,
  family: 4 | 6,
  opts: SafeFetchOptions,
  cut: Cut,
  cutFailure: () => SafeFetchFailure,
  maxBytes: number,
  fail: (kind: SafeFetchFailureKind, message: string, extra?: Partial<SafeFetchFailure>) => SafeFetchFailure,
  elapsed: () => number,
  retryStale = true,
): Promise<SafeFetchResult> {
  // Pin the connection to the address we checked: Node calls this instead of DNS.
  const pinned: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all) {
      ;(cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address, family },
      ])
    } else cb(null, address, family)
  }
  const isHttps = url.protocol === 'https:'
  const body =
    opts.body === undefined ? undefined : typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body
  const headers: Record<string, string> = { ...opts.headers }
  if (body !== undefined) headers['content-length'] = String(body.byteLength)
  const hostName = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname

  return new Promise<SafeFetchResult>((resolve) => {
    let settled = false
    const done = (r: SafeFetchResult) => {
      if (settled) return
      settled = true
      resolve(r)
    }
    const reqOpts: https.RequestOptions = {
      method: opts.method ?? 'GET',
      protocol: url.protocol,
      hostname: hostName,
      port: url.port || (isHttps ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      headers,
      lookup: pinned,
      agent: opts.agent,
    }
    if (isHttps) {
      // SNI and certificate checks use the hostname, never the pinned IP.
      if (!isIP(hostName)) reqOpts.servername = hostName
      if (opts.ca !== undefined) reqOpts.ca = opts.ca
    }
    let answered = false
    const req = (isHttps ? https : http).request(reqOpts, (res) => {
      answered = true
      const status = res.statusCode ?? 0
      const resHeaders: Record<string, string> = {}
      for (const [k, v] of Object.entries(res.headers)) {
        if (v !== undefined) resHeaders[k] = Array.isArray(v) ? v.join(', ') : v
      }
      if (status >= 300 && status < 400) {
        done(
          fail('redirect', `receiver answered ${status} (redirects are not followed)`, {
            status,
            location: resHeaders.location,
          }),
        )
        res.destroy()
        return
      }
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      res.on('data', (chunk: Buffer) => {
        if (settled) return
        if (size + chunk.length > maxBytes) {
          if (opts.oversize === 'truncate') {
            chunks.push(chunk.subarray(0, maxBytes - size))
            size = maxBytes
            truncated = true
            done({
              ok: true,
              status,
              headers: resHeaders,
              body: Buffer.concat(chunks),
              truncated,
              address,
              durationMs: elapsed(),
            })
            res.destroy()
            return
          }
          done(fail('too_large', `response body exceeds ${maxBytes} bytes`, { status }))
          res.destroy()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      res.on('end', () => {
        done({
          ok: true,
          status,
          headers: resHeaders,
          body: Buffer.concat(chunks),
          truncated,
          address,
          durationMs: elapsed(),
        })
      })
      res.on('error', (err) => done(classify(err)))
      res.on('aborted', () => done(classify(new Error('response aborted'))))
    })
    const classify = (err: NodeJS.ErrnoException): SafeFetchFailure => {
      if (cut.reason) return cutFailure()
      const code = err.code ?? ''
      if (/CERT|SSL|TLS|SELF_SIGNED|ERR_TLS/i.test(code) || /certificate|ssl|tls/i.test(err.message)) {
        return fail('tls', `TLS error: ${code || err.message}`)
      }
      return fail('connect', `connection failed: ${code || err.message}`)
    }
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the receiver closed while it sat idle fails at once, before any
      // answer: send once more on a new connection (the remedy Node's http docs give).
      if (retryStale && req.reusedSocket && err.code === 'ECONNRESET' && !answered && !cut.reason) {
        settled = true
        resolve(request(url, address, family, opts, cut, cutFailure, maxBytes, fail, elapsed, false))
        return
      }
      done(classify(err))
    })
    // The deadline destroys the request (and its response): both end in `classify` above.
    cut.cancel = () => req.destroy(new Error(cut.reason))
    if (body !== undefined) req.end(body)
    else req.end()
  })
}
