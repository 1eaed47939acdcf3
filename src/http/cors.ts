import type { IncomingMessage, ServerResponse } from 'node:http'
import { INDEX_HEADERS } from './index-headers.ts'
import { requestIdFrom } from './request-id.ts'

/**
 * CORS (the Fetch standard's CORS protocol) for the API surfaces under /v1: JSON-RPC, REST, the
 * bundler, the paymaster and the Alchemy-compatible root, so a dApp page on any origin can call
 * them with an API key (docs/browser.md). Which origins may USE a key is the key's
 * allowed-origins list, decided with everything else in http/access-decision.ts: CORS itself
 * lets every origin read every answer, refusals included, so a page can show why it was
 * refused. Never `Access-Control-Allow-Credentials`: keys travel in headers, not cookies, and
 * the dashboard (cookies) stays same-origin, with no CORS headers at all.
 */

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOW_HEADERS = 'Content-Type, X-API-Key, Authorization, X-Request-Id'
/** Response headers a page may read besides the CORS-safelisted ones. */
const EXPOSE_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'X-Cache',
  ...Object.values(INDEX_HEADERS),
].join(', ')
/** How long a browser may reuse a preflight's answer (seconds; Chromium caps it at 7200). */
const MAX_AGE = '7200'

/** A serialised origin as browsers send it (or `null`); anything else is answered with `*`. */
const ORIGIN = /^(?:null|[a-z][a-z0-9+.-]{0,30}:\/\/[\x21-\x2e\x30-\x7e]{1,300})$/

/** Whether a request path is an API surface that answers cross-origin requests. */
export function isApiPath(url: string | undefined): boolean {
  return url?.startsWith('/v1/') === true
}

/** `Access-Control-Allow-Origin`: the request's Origin echoed (with `Vary: Origin`), or `*`. */
function allowOrigin(origin: string | undefined): string {
  return origin !== undefined && ORIGIN.test(origin) ? origin : '*'
}

/** The CORS headers of an actual (non-preflight) answer to a request that carried `Origin`. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': allowOrigin(origin),
    vary: 'Origin',
    'access-control-expose-headers': EXPOSE_HEADERS,
  }
}

/**
 * Answers an OPTIONS request to an API path: 204 with what a preflight needs. A preflight
 * carries no key (browsers never send credentials on one), so it is answered for any path
 * under /v1 without one; the actual request then meets the access decision.
 */
export function answerPreflight(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin
  res.writeHead(204, {
    'access-control-allow-origin': allowOrigin(origin),
    vary: 'Origin',
    'access-control-allow-methods': ALLOW_METHODS,
    'access-control-allow-headers': ALLOW_HEADERS,
    'access-control-max-age': MAX_AGE,
    allow: ALLOW_METHODS,
    'x-request-id': requestIdFrom(req.headers['x-request-id']),
  })
  res.end()
}
