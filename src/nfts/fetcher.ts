import { safeFetch } from '../net/safe-fetch.ts'
import { type Gateways, isJsonLike, resolveUri } from './uri.ts'

export interface FetchPolicy {
  /** One deadline for the whole fetch, redirects included. */
  timeoutMs: number
  /** Largest metadata document read (bytes); a larger one is refused, not truncated. */
  maxBytes: number
  /** Dev mode and tests only: metadata servers on 127.0.0.1 / ::1 are reachable. */
  allowLoopback: boolean
  /** Redirects followed, each hop checked like the first request. */
  maxRedirects: number
  gateways: Gateways
}

export type FetchOutcome =
  | { ok: true; doc: Record<string, unknown> }
  /** `error` is safe to show callers: it never names resolved addresses (no SSRF oracle). */
  | { ok: false; error: string; detail?: string }

/**
 * Loads the metadata document a token URI points to: inline `data:` documents are decoded,
 * everything else goes through the shared SSRF-safe fetch (src/net/safe-fetch.ts), so private,
 * loopback and link-local targets are refused after DNS resolution — on every redirect hop too.
 */
export async function loadDocument(
  uri: string,
  policy: FetchPolicy,
  signal?: AbortSignal,
): Promise<FetchOutcome> {
  const where = resolveUri(uri, policy.gateways)
  if (where.kind === 'unsupported') return { ok: false, error: where.reason }
  if (where.kind === 'inline') {
    if (!isJsonLike(where.mediaType))
      return { ok: false, error: `data: URI holds ${where.mediaType}, not a JSON document` }
    if (where.body.length > policy.maxBytes)
      return { ok: false, error: `metadata larger than ${policy.maxBytes} bytes` }
    return parseDocument(where.body)
  }

  const deadline = Date.now() + policy.timeoutMs
  let url = where.url
  for (let hop = 0; ; hop++) {
    const left = deadline - Date.now()
    if (left <= 0) return { ok: false, error: `no response within ${policy.timeoutMs} ms` }
    const res = await safeFetch(url, {
      timeoutMs: left,
      maxBytes: policy.maxBytes,
      allowLoopback: policy.allowLoopback,
      headers: { accept: 'application/json, text/plain;q=0.9, */*;q=0.1', 'user-agent': 'Halyard' },
      ...(signal ? { signal } : {}),
    })
    if (!res.ok) {
      if (res.kind === 'redirect' && res.location && hop < policy.maxRedirects) {
        let next: URL
        try {
          next = new URL(res.location, url)
        } catch {
          return { ok: false, error: 'metadata server redirected to an invalid URL' }
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:')
          return { ok: false, error: `metadata server redirected to a ${next.protocol} URL` }
        url = next.toString()
        continue
      }
      return { ok: false, error: publicReason(res.kind, policy), detail: res.message }
    }
    if (res.status < 200 || res.status >= 300)
      return { ok: false, error: `metadata server answered HTTP ${res.status}` }
    const type = res.headers['content-type']
    if (!isJsonLike(type)) return { ok: false, error: `metadata server sent ${type}, not JSON` }
    return parseDocument(res.body)
  }
}

function publicReason(kind: string, policy: FetchPolicy): string {
  switch (kind) {
    case 'blocked_address':
      return 'metadata URL refused: it points to a private, loopback or link-local address'
    case 'timeout':
      return `no response within ${policy.timeoutMs} ms`
    case 'too_large':
      return `metadata larger than ${policy.maxBytes} bytes`
    case 'redirect':
      return `more than ${policy.maxRedirects} redirects`
    case 'dns':
      return 'metadata host did not resolve'
    case 'invalid_url':
      return 'metadata URL is not a valid http(s) URL'
    case 'tls':
      return 'TLS error talking to the metadata server'
    case 'aborted':
      return 'fetch aborted (server shutting down)'
    default:
      return 'could not connect to the metadata server'
  }
}

function parseDocument(body: Buffer): FetchOutcome {
  let doc: unknown
  try {
    doc = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''))
  } catch {
    return { ok: false, error: 'metadata is not valid JSON' }
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    return { ok: false, error: 'metadata is not a JSON object' }
  return { ok: true, doc: clean(doc, 0) as Record<string, unknown> }
}

const MAX_DEPTH = 32
/** U+0000 and lone surrogates (a high one not followed by a low one, a low one not after a high one). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what PostgreSQL refuses
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * PostgreSQL text and jsonb cannot hold U+0000, which JSON allows ("\u0000"), and jsonb refuses
 * a lone UTF-16 surrogate ("\ud800"), which JSON.parse accepts: U+0000 is removed and a lone
 * surrogate becomes U+FFFD in every string and key, so a hostile document cannot turn the cache
 * write into a 500. Nesting deeper than any real metadata is cut off (null) rather than walked.
 */
function clean(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return v.replace(UNSTORABLE, (c) => (c === '\u0000' ? '' : '\ufffd'))
  if (v === null || typeof v !== 'object') return v
  if (depth >= MAX_DEPTH) return null
  if (Array.isArray(v)) return v.map((x) => clean(x, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) {
    // defineProperty, not assignment: a "__proto__" key stays a plain key.
    Object.defineProperty(out, clean(k, depth) as string, {
      value: clean(x, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return out
}
