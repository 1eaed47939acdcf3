import { randomBytes } from 'node:crypto'

/**
 * The hostile sweep's vocabulary: what a route and a request are, what a case is, and the small
 * builders the cases share. The cases themselves live in hostile-cases.ts (and, per surface,
 * hostile-surface-cases.ts); the raw sender and the checks in hostile-harness.ts.
 */
export const HANG_MS = 20_000
export const ADDR = '0x00000000000000000000000000000000000a11ce'
export const BAD_KEY = `hk_live_${'0'.repeat(40)}`
export const ADMIN_TOKEN = randomBytes(24).toString('base64url')

export interface Route {
  method: string
  url: string // '/v1/webhooks/:id'
  params: string[]
  /** Answers without an API key (ops routes) or with its own guard (admin). */
  kind: 'public' | 'admin' | 'keyed'
  /** A good value per path parameter (the params schema's examples: hostile-schemas.ts). */
  examples: Record<string, string>
  /** Cases made from the route's declared body and query schemas. */
  cases: Case[]
}

export interface Req {
  method: string
  path: string
  headers: Record<string, string | string[]>
  body?: string | Buffer
}

export interface Case {
  name: string
  /** Which routes the case applies to (default: all). */
  when?: (r: Route) => boolean
  build(r: Route, good: Req): Req
  /** When the answer is a 4xx, the message must match (it names the problem). */
  mention?: (r: Route) => RegExp | undefined
}

export const hasBody = (r: Route) => ['POST', 'PUT', 'PATCH'].includes(r.method)
export const keyed = (r: Route) => r.kind === 'keyed'
export const isRpc = (r: Route) =>
  r.url.startsWith('/v1/rpc/') ||
  r.url.startsWith('/v1/paymaster/') ||
  r.url.startsWith('/v1/bundler/') ||
  isAlchemyRpc(r)
/** The compat root's JSON-RPC route (`POST /v1/alchemy/{network}/v2/{apiKey}`). */
export const isAlchemyRpc = (r: Route) => r.method === 'POST' && r.url.endsWith('/v2/:apiKey')
export const json = (good: Req, body: string | Buffer, extra: Record<string, string> = {}): Req => ({
  ...good,
  headers: { ...good.headers, 'content-type': 'application/json', ...extra },
  body,
})
export const withQuery = (good: Req, q: string): Req => ({ ...good, path: `${good.path}?${q}` })
/** Routes with the key in the path (the Alchemy-compatible root) ignore header keys: 'alchemy: wrong key in the path' checks theirs. */
export const authMention = (r: Route) =>
  r.kind === 'admin'
    ? /admin token/i
    : r.kind === 'keyed' && !r.params.includes('apiKey')
      ? /API key/i
      : undefined
export const jsonMention = (r: Route) => (hasBody(r) ? /JSON/i : undefined)

/** The route's good value for a path parameter (declared with the route's params schema). */
export function goodParam(r: Route, name: string): string {
  const v = r.examples[name]
  if (v === undefined) throw new Error(`no example for path parameter :${name} of ${r.method} ${r.url}`)
  return v
}

export const fillPath = (r: Route, over: Record<string, string> = {}) =>
  r.url.replace(/:([A-Za-z_]+)/g, (_, p: string) => over[p] ?? goodParam(r, p))
