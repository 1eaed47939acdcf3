/**
 * Token and image URIs as contracts publish them, turned into something Halyard can read:
 * ERC-1155 `{id}` substitution, `data:` URIs decoded in place, `ipfs://` and `ar://` (and bare
 * CIDs) rewritten to the operator's gateways. No I/O here.
 */

export interface Gateways {
  /** Base URL the IPFS path is appended to, e.g. `https://ipfs.io/ipfs/`. */
  ipfs: string
  /** Base URL the Arweave transaction id is appended to, e.g. `https://arweave.net/`. */
  arweave: string
}

export type ResolvedUri =
  /** A `data:` URI: the document is in the URI itself. */
  | { kind: 'inline'; mediaType: string; body: Buffer }
  /** Fetch this over HTTP(S) (after gateway rewriting). */
  | { kind: 'http'; url: string }
  | { kind: 'unsupported'; reason: string }

/**
 * EIP-1155: "{id}" is replaced by the id as 64 lowercase hex digits, zero-padded, without 0x —
 * everywhere it occurs (in the URI and, by the same rule, in JSON values).
 */
export function expandId(template: string, tokenId: bigint): string {
  if (!template.includes('{id}')) return template
  return template.replaceAll('{id}', tokenId.toString(16).padStart(64, '0'))
}

// CIDv0 (base58btc multihash, "Qm…") and CIDv1 in base32 ("b…"), the forms seen in token URIs.
const BARE_CID = /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{58,})(\/.*)?$/

/** `ipfs://…`, `ar://…` or a bare CID as a gateway URL; other URIs unchanged; null if unusable. */
export function toGatewayUrl(uri: string, gw: Gateways): string | null {
  const u = uri.trim()
  if (/^https?:\/\//i.test(u)) return u
  if (/^ipfs:\/\//i.test(u)) {
    // Both ipfs://CID/path and the legacy ipfs://ipfs/CID/path are in the wild.
    const path = u.slice('ipfs://'.length).replace(/^ipfs\//i, '')
    return path ? joinGateway(gw.ipfs, path) : null
  }
  if (/^ar:\/\//i.test(u)) {
    const path = u.slice('ar://'.length)
    return path ? joinGateway(gw.arweave, path) : null
  }
  if (BARE_CID.test(u)) return joinGateway(gw.ipfs, u)
  return null
}

function joinGateway(base: string, path: string): string {
  return `${base.endsWith('/') ? base : `${base}/`}${path.replace(/^\/+/, '')}`
}

/** Where the metadata document of `uri` comes from. */
export function resolveUri(uri: string, gw: Gateways): ResolvedUri {
  const u = uri.trim()
  if (u === '') return { kind: 'unsupported', reason: 'the token URI is empty' }
  if (/^data:/i.test(u)) return decodeDataUri(u)
  const url = toGatewayUrl(u, gw)
  if (url === null) {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(u)?.[1]
    return {
      kind: 'unsupported',
      reason: scheme ? `URI scheme ${scheme}: is not supported` : 'the token URI is not a URL',
    }
  }
  return { kind: 'http', url }
}

/**
 * RFC 2397: `data:[<mediatype>][;base64],<data>`. Plain data is percent-decoded; contracts that
 * put raw JSON with a stray `%` in it are taken literally rather than refused.
 */
export function decodeDataUri(uri: string): ResolvedUri {
  const comma = uri.indexOf(',')
  if (comma < 0) return { kind: 'unsupported', reason: 'data: URI has no comma' }
  const header = uri.slice('data:'.length, comma)
  const data = uri.slice(comma + 1)
  const parts = header.split(';').map((p) => p.trim())
  const isBase64 = parts.some((p) => p.toLowerCase() === 'base64')
  const mediaType = (parts[0] && !parts[0].includes('=') ? parts[0] : 'text/plain').toLowerCase()
  if (isBase64) {
    const clean = decodePercent(data).replace(/\s+/g, '')
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean)) {
      return { kind: 'unsupported', reason: 'data: URI is marked base64 but is not valid base64' }
    }
    return { kind: 'inline', mediaType, body: Buffer.from(clean, 'base64') }
  }
  return { kind: 'inline', mediaType, body: Buffer.from(decodePercent(data), 'utf8') }
}

function decodePercent(s: string): string {
  if (!s.includes('%')) return s
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** Media types a metadata document may arrive as (gateways often say text/plain or octet-stream). */
export function isJsonLike(mediaType: string | undefined): boolean {
  if (mediaType === undefined || mediaType.trim() === '') return true
  const t = (mediaType.split(';')[0] ?? '').trim().toLowerCase()
  return (
    t === 'application/json' ||
    t.endsWith('+json') ||
    t === 'text/json' ||
    t === 'text/plain' ||
    t === 'application/octet-stream' ||
    t === 'binary/octet-stream'
  )
}
