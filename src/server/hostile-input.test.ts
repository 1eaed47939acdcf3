import { randomBytes } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { ERROR_STATUS } from '../errors.ts'
import { DEFAULT_BODY_LIMIT } from './app.ts'

/**
 * The project's non-negotiable: every endpoint answers malformed, missing, oversized and hostile
 * input with the spec's error body (`{"error":{code,message,status}}`) and a message naming the
 * problem — never a 500, never a hang.
 *
 * Routes come from the running app (printRoutes), not from a list kept here: a new route is swept
 * the day it is registered. Each route gets the battery below (auth, body, query, path, method,
 * and for JSON-RPC garbage batches); every answer must be < 500, and every 4xx must carry the
 * error body whose `status` equals the HTTP status. A request unanswered within HANG_MS fails
 * the test as a hang (a hang detector, not a speed assertion). HEAD (Fastify's automatic twin of
 * GET) is not swept: it has no body to check.
 */

const HANG_MS = 20_000
const ADDR = '0x00000000000000000000000000000000000a11ce'
const BAD_KEY = `hk_live_${'0'.repeat(40)}`
const ADMIN_TOKEN = randomBytes(24).toString('base64url')

// ---------------------------------------------------------------------------------------------
// The battery. A case changes one thing about an otherwise well-formed request to a route.
// ---------------------------------------------------------------------------------------------

interface Route {
  method: string
  url: string // '/v1/webhooks/:id'
  params: string[]
  /** Answers without an API key (ops routes) or with its own guard (admin). */
  kind: 'public' | 'admin' | 'keyed'
}

interface Req {
  method: string
  path: string
  headers: Record<string, string | string[]>
  body?: string | Buffer
}

interface Case {
  name: string
  /** Which routes the case applies to (default: all). */
  when?: (r: Route) => boolean
  build(r: Route, good: Req): Req
  /** When the answer is a 4xx, the message must match (it names the problem). */
  mention?: (r: Route) => RegExp | undefined
}

const hasBody = (r: Route) => ['POST', 'PUT', 'PATCH'].includes(r.method)
const keyed = (r: Route) => r.kind === 'keyed'
const isRpc = (r: Route) => r.url.startsWith('/v1/rpc/')
const json = (good: Req, body: string | Buffer, extra: Record<string, string> = {}): Req => ({
  ...good,
  headers: { ...good.headers, 'content-type': 'application/json', ...extra },
  body,
})
const withQuery = (good: Req, q: string): Req => ({ ...good, path: `${good.path}?${q}` })
const authMention = (r: Route) =>
  r.kind === 'admin' ? /admin token/i : r.kind === 'keyed' ? /API key/i : undefined
const jsonMention = (r: Route) => (hasBody(r) ? /JSON/i : undefined)

/** A valid value per path parameter name; an unknown name fails the sweep (add it here). */
function goodParam(r: Route, name: string): string {
  switch (name) {
    case 'chain':
      return r.params.includes('network') ? 'ethereum' : 'ethereum-devnet'
    case 'network':
      return 'devnet'
    case 'address':
    case 'contract':
      return ADDR
    case 'token_id':
      return '1'
    case 'id':
      return r.kind === 'admin' ? 'key_does_not_exist' : `wh_${'0'.repeat(24)}`
    case 'event_id':
      return `evt_${'0'.repeat(24)}`
  }
  throw new Error(`no fixture for path parameter :${name} of ${r.method} ${r.url}; add one to goodParam`)
}

const fillPath = (r: Route, over: Record<string, string> = {}) =>
  r.url.replace(/:([A-Za-z_]+)/g, (_, p: string) => over[p] ?? goodParam(r, p))

/** Hostile values for one path parameter at a time (raw, already URL-encoded where needed). */
const PATH_VALUES: ReadonlyArray<readonly [string, string]> = [
  ['10k chars', 'a'.repeat(10_000)],
  ['201 chars (just over maxParamLength)', 'b'.repeat(201)],
  ['..', '..'],
  ['%2e%2e%2f traversal', '%2e%2e%2f%2e%2e%2fetc%2fpasswd'],
  ['percent-encoded NUL', '%00'],
  ['NUL inside', 'a%00b'],
  ['unicode (emoji, RTL override, CJK)', encodeURIComponent('💥ü\u202e漢字')],
  ['invalid UTF-8 %ff%fe', '%ff%fe'],
  ['bare %', '%'],
  ['bad escape %zz', '%zz'],
  ['SQL-ish', encodeURIComponent("1' or '1'='1; drop table keys;--")],
  ['huge number', '9'.repeat(100)],
  ['negative', '-1'],
  ['__proto__', '__proto__'],
  ['constructor', 'constructor'],
]

const CASES: Case[] = [
  // --- authentication -------------------------------------------------------------------------
  {
    name: 'no key',
    build: (_, g) => ({ ...g, headers: {} }),
    mention: authMention,
  },
  {
    name: 'bad key (well-formed, unknown)',
    build: (r, g) => ({
      ...g,
      headers: r.kind === 'admin' ? { authorization: 'Bearer nope' } : { 'x-api-key': BAD_KEY },
    }),
    mention: authMention,
  },
  { name: 'garbage key', build: (_, g) => ({ ...g, headers: { 'x-api-key': '\u00ff\u00fe;"<>' } }) },
  { name: 'empty Bearer', build: (_, g) => ({ ...g, headers: { authorization: 'Bearer ' } }) },
  { name: 'Basic auth', build: (_, g) => ({ ...g, headers: { authorization: 'Basic Zm9vOmJhcg==' } }) },
  { name: '10k-char key', build: (_, g) => ({ ...g, headers: { 'x-api-key': 'k'.repeat(10_000) } }) },
  {
    name: 'duplicated X-API-Key',
    when: keyed,
    build: (_, g) => ({ ...g, headers: { 'x-api-key': [String(g.headers['x-api-key']), BAD_KEY] } }),
  },
  {
    name: 'key twice in ?apiKey=',
    build: (_, g) => withQuery({ ...g, headers: {} }, `apiKey=${BAD_KEY}&apiKey=x`),
    mention: authMention,
  },
  {
    name: 'hostile X-Request-Id',
    build: (_, g) => ({ ...g, headers: { ...g.headers, 'x-request-id': '../\u00ff' } }),
  },

  // --- body -------------------------------------------------------------------------------------
  { name: 'malformed JSON', build: (_, g) => json(g, '{"jsonrpc":"2.0",'), mention: jsonMention },
  { name: 'body: array', build: (_, g) => json(g, '[1,2,3]') },
  { name: 'body: empty array', build: (_, g) => json(g, '[]') },
  { name: 'body: string', build: (_, g) => json(g, '"hello"') },
  { name: 'body: number', build: (_, g) => json(g, '42') },
  { name: 'body: null', build: (_, g) => json(g, 'null') },
  { name: 'body: true', build: (_, g) => json(g, 'true') },
  { name: 'body: empty with JSON content-type', build: (_, g) => json(g, '') },
  {
    name: `body over the ${DEFAULT_BODY_LIMIT}-byte limit`,
    build: (_, g) => json(g, `{"a":"${'x'.repeat(DEFAULT_BODY_LIMIT)}"}`),
    mention: (r) => (hasBody(r) ? new RegExp(`${DEFAULT_BODY_LIMIT}-byte`) : undefined),
  },
  { name: 'unknown extra fields', build: (_, g) => json(g, '{"zz_unknown":1,"another":{"deep":[1]}}') },
  { name: '__proto__ key', build: (_, g) => json(g, '{"__proto__":{"polluted":true}}') },
  {
    name: 'constructor.prototype key',
    build: (_, g) => json(g, '{"constructor":{"prototype":{"polluted":1}}}'),
  },
  { name: 'deeply nested (50k)', build: (_, g) => json(g, '['.repeat(50_000) + ']'.repeat(50_000)) },
  {
    name: 'invalid UTF-8 bytes',
    build: (_, g) => json(g, Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
  },
  { name: 'fields of the wrong type', build: (_, g) => json(g, JSON.stringify(wrongTypes)) },
  { name: 'NUL in every string field', build: (_, g) => json(g, JSON.stringify(nulFields)) },
  {
    name: 'webhook body well-formed but NUL in config',
    when: (r) => r.url === '/v1/webhooks' && r.method === 'POST',
    build: (_, g) =>
      json(
        g,
        JSON.stringify({
          url: 'https://receiver.test/wh',
          chain: 'ethereum-devnet',
          event_type: 'address_activity',
          config: { addresses: [ADDR], 'k\u0000': 'v\u0000' },
        }),
      ),
  },
  // --- content type -----------------------------------------------------------------------------
  { name: 'text/plain JSON', build: (_, g) => json(g, '{"a":1}', { 'content-type': 'text/plain' }) },
  {
    name: 'form-urlencoded',
    build: (_, g) => json(g, 'a=1&b=2', { 'content-type': 'application/x-www-form-urlencoded' }),
  },
  {
    name: 'multipart',
    build: (_, g) =>
      json(g, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', {
        'content-type': 'multipart/form-data; boundary=x',
      }),
  },
  { name: 'content-type garbage', build: (_, g) => json(g, '{}', { 'content-type': ';;;/=' }) },
  {
    name: 'charset utf-16',
    build: (_, g) => json(g, '{}', { 'content-type': 'application/json; charset=utf-16' }),
  },
  { name: 'body without content-type', build: (_, g) => ({ ...g, body: '{"a":1}' }) },

  // --- query --------------------------------------------------------------------------------------
  { name: 'page=-1', build: (_, g) => withQuery(g, 'page=-1') },
  { name: 'page=0', build: (_, g) => withQuery(g, 'page=0') },
  { name: 'limit=1e9', build: (_, g) => withQuery(g, 'limit=1e9') },
  { name: 'limit=1000000000', build: (_, g) => withQuery(g, 'limit=1000000000') },
  { name: 'limit=abc', build: (_, g) => withQuery(g, 'limit=abc') },
  { name: 'page=1e400', build: (_, g) => withQuery(g, `page=1${'0'.repeat(400)}`) },
  { name: 'duplicated page', build: (_, g) => withQuery(g, 'page=1&page=2&limit=5&limit=6') },
  { name: 'array-style limit[]', build: (_, g) => withQuery(g, 'limit[]=5&page[0]=1') },
  {
    name: 'duplicated filters',
    build: (_, g) => withQuery(g, 'chain=a&chain=b&status=active&status=paused&refresh=true&refresh=false'),
  },
  { name: 'filters of wrong value', build: (_, g) => withQuery(g, 'chain=&status=disabled2&refresh=yes') },
  { name: 'admin ?account duplicated', build: (_, g) => withQuery(g, 'account=a@b.c&account=x') },
  {
    name: 'NUL in query values',
    build: (_, g) => withQuery(g, 'account=a%00b&chain=%00&status=%00&refresh=%00'),
  },
  { name: 'query bad escapes', build: (_, g) => withQuery(g, '%zz=%&page=%ff&limit=%00') },
  {
    name: '__proto__ in query',
    build: (_, g) => withQuery(g, '__proto__[x]=1&constructor=1&hasOwnProperty=1'),
  },
  { name: '10k-char query', build: (_, g) => withQuery(g, `page=${'9'.repeat(10_000)}`) },

  // --- method -------------------------------------------------------------------------------------
  {
    name: 'method not registered on the path',
    build: (r, g) => ({ ...g, method: unusedMethod(r) }),
  },

  // --- JSON-RPC -----------------------------------------------------------------------------------
  {
    name: 'batch of garbage members',
    when: isRpc,
    build: (_, g) =>
      json(
        g,
        JSON.stringify([
          1,
          null,
          'x',
          [],
          {},
          { jsonrpc: '2.0', id: {}, method: 1 },
          { jsonrpc: '2.0', id: [1], method: 'eth_chainId' },
          { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: { a: 1 } },
          { jsonrpc: '2.0', id: 2, method: '__proto__', params: [] },
          { jsonrpc: '2.0', id: 3, method: 'constructor', params: [] },
          { jsonrpc: '2.0', id: 4, method: 'toString', params: [] },
          { jsonrpc: '2.0', id: 5, method: 'x'.repeat(10_000), params: [] },
          { jsonrpc: '2.0', id: 6, method: 'eth_getBalance', params: ['0xnothex', { x: [] }] },
          { jsonrpc: '2.0', id: 7, method: 'eth_call', params: 'not-an-array' },
          { jsonrpc: '2.0', id: 1e308 * 10, method: 'eth_chainId' },
        ]),
      ),
  },
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', ''].map(
    (method): Case => ({
      name: `single call method ${JSON.stringify(method)}`,
      when: isRpc,
      build: (_, g) => json(g, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] })),
    }),
  ),
  {
    name: 'single call with an object id and huge params',
    when: isRpc,
    build: (_, g) =>
      json(
        g,
        JSON.stringify({
          jsonrpc: '2.0',
          id: { a: 1 },
          method: 'eth_chainId',
          params: Array(100_000).fill(0),
        }),
      ),
  },
  {
    name: 'batch of 100 nulls',
    when: isRpc,
    build: (_, g) => json(g, JSON.stringify(Array(100).fill(null))),
  },
  {
    name: 'batch of 101 (over the limit)',
    when: isRpc,
    build: (_, g) =>
      json(g, JSON.stringify(Array(101).fill({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }))),
  },
]

/** Every field any route reads, each of the wrong type. */
const wrongTypes = {
  url: 1,
  chain: ['ethereum-devnet'],
  event_type: { x: 1 },
  config: 'not an object',
  status: 7,
  owner: 123,
  salt: { x: 1 },
  email: null,
  plan: [],
  account: false,
  env: 0,
  scopes: 'rpc:read',
  name: {},
  jsonrpc: 2,
  id: { x: 1 },
  method: ['eth_chainId'],
  params: 'x',
}

/** Every string field any route reads, well-formed where it matters, with a NUL inside. */
const nulFields = {
  email: 'n\u0000@x.test',
  plan: 'free',
  account: 'n\u0000@x.test',
  env: 'live',
  name: 'n\u0000',
  owner: ADDR,
  chain: 'ethereum-devnet',
  salt: '0',
  status: 'active\u0000',
  url: 'https://receiver.test/\u0000',
}

const ALL_METHODS = ['PUT', 'PATCH', 'DELETE', 'POST', 'GET', 'OPTIONS']
let registered = new Map<string, Set<string>>()
const unusedMethod = (r: Route) => ALL_METHODS.find((m) => !registered.get(r.url)?.has(m)) ?? 'OPTIONS'

/** Path-parameter cases: one per (parameter, hostile value). */
function pathCases(r: Route): Case[] {
  return r.params.flatMap((p) =>
    PATH_VALUES.map(
      ([label, value]): Case => ({
        name: `:${p} = ${label}`,
        build: (route, g) => ({ ...g, path: fillPath(route, { [p]: value }) }),
      }),
    ),
  )
}

// ---------------------------------------------------------------------------------------------
// The harness: raw node:http (fetch would normalise `..` and refuse some bytes), one connection
// per request, a hang detector per request.
// ---------------------------------------------------------------------------------------------

interface Answer {
  status: number
  contentType: string
  text: string
}

function send(origin: URL, req: Req): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false
    const timer = setTimeout(() => {
      r.destroy()
      reject(new Error(`HANG: no answer within ${HANG_MS} ms`))
    }, HANG_MS)
    const r = http.request(
      {
        host: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.path,
        // Explicit framing: node would otherwise send a GET's body unframed (a second "request").
        headers: {
          ...req.headers,
          connection: 'close',
          ...(req.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(req.body)) }),
        },
        agent: false,
        insecureHTTPParser: false,
      },
      (res) => {
        answered = true
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          clearTimeout(timer)
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          })
        })
        res.on('error', (err) => {
          clearTimeout(timer)
          reject(err)
        })
      },
    )
    r.on('error', (err) => {
      // The server may answer (e.g. "body too large") and close before it has read all we send.
      if (answered) return
      clearTimeout(timer)
      reject(err)
    })
    if (req.body !== undefined) r.end(req.body)
    else r.end()
  })
}

/** What is wrong with an answer, or undefined when it honours the contract. */
function violation(ans: Answer, mention: RegExp | undefined): string | undefined {
  if (ans.status >= 500) return `status ${ans.status} (5xx)`
  if (ans.status < 400) return undefined
  if (!/application\/json/.test(ans.contentType)) return `4xx with content-type "${ans.contentType}"`
  let body: unknown
  try {
    body = JSON.parse(ans.text)
  } catch {
    return '4xx body is not JSON'
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; status?: unknown } }).error
  if (!e || typeof e !== 'object' || Object.keys(body as object).join() !== 'error')
    return '4xx body is not {"error":{...}}'
  if (typeof e.code !== 'string' || !(e.code in ERROR_STATUS)) return `unknown error.code ${String(e.code)}`
  if (ERROR_STATUS[e.code as keyof typeof ERROR_STATUS] !== ans.status)
    return `error.code ${e.code} does not map to HTTP ${ans.status}`
  if (e.status !== ans.status) return `error.status ${String(e.status)} != HTTP ${ans.status}`
  if (typeof e.message !== 'string' || e.message.trim() === '') return 'empty error.message'
  if (mention && !mention.test(e.message)) return `message does not name the problem (want ${mention})`
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Route enumeration from the running app.
// ---------------------------------------------------------------------------------------------

/** Parses `printRoutes({ commonPrefix: false })`: one tree line per path segment group. */
export function routesFromTree(tree: string): { url: string; methods: string[] }[] {
  const out: { url: string; methods: string[] }[] = []
  const stack: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?\s*$/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    stack.length = depth
    stack.push(m[2]!)
    const methods = (m[3] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s && s !== '-')
    if (methods.length) out.push({ url: stack.join(''), methods })
  }
  return out
}

/** The route groups, one `it` each; every route the app serves must fall into exactly one. */
const GROUPS: ReadonlyArray<readonly [name: string, match: (url: string) => boolean]> = [
  ['ops (/health, /ready, /metrics)', (u) => ['/health', '/ready', '/metrics'].includes(u)],
  ['admin API (/admin)', (u) => u.startsWith('/admin/')],
  ['JSON-RPC (/v1/rpc)', (u) => u.startsWith('/v1/rpc/')],
  ['WebSocket (plain GET /v1/ws)', (u) => u.startsWith('/v1/ws/')],
  ['tokens (/v1/tokens)', (u) => u.startsWith('/v1/tokens/')],
  ['NFTs (/v1/nfts)', (u) => u.startsWith('/v1/nfts/')],
  ['gas (/v1/gas)', (u) => u.startsWith('/v1/gas/')],
  ['wallets (/v1/wallets)', (u) => u === '/v1/wallets' || u.startsWith('/v1/wallets/')],
  ['webhooks (/v1/webhooks)', (u) => u === '/v1/webhooks' || u.startsWith('/v1/webhooks/')],
]

describe('hostile input on every route (PGlite)', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let key: string
  let origin: URL
  let routes: Route[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      extra: { adminToken: ADMIN_TOKEN },
    })
    key = await h.createKey({ env: 'live' }) // no scopes given: all of them
    origin = new URL(h.halyard.origin)
    const tree = h.halyard.app.printRoutes({ commonPrefix: false })
    const found = routesFromTree(tree)
    registered = new Map(found.map((f) => [f.url, new Set(f.methods)]))
    routes = found.flatMap((f) =>
      f.methods
        .filter((m) => m !== 'HEAD')
        .map((method) => ({
          method,
          url: f.url,
          params: [...f.url.matchAll(/:([A-Za-z_]+)/g)].map((x) => x[1]!),
          kind: ['/health', '/ready', '/metrics'].includes(f.url)
            ? ('public' as const)
            : f.url.startsWith('/admin/')
              ? ('admin' as const)
              : ('keyed' as const),
        })),
    )
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  const goodRequest = (r: Route): Req => ({
    method: r.method,
    path: fillPath(r),
    headers:
      r.kind === 'admin'
        ? { authorization: `Bearer ${ADMIN_TOKEN}` }
        : r.kind === 'keyed'
          ? { 'x-api-key': key }
          : {},
  })

  it('enumerates the routes from the app, and every route belongs to a group below', () => {
    expect(routes.length).toBeGreaterThan(20)
    const orphans = routes.filter((r) => GROUPS.filter(([, m]) => m(r.url)).length !== 1)
    expect(
      orphans.map((r) => `${r.method} ${r.url}`),
      'routes in no (or several) group(s)',
    ).toEqual([])
    for (const [name, match] of GROUPS)
      expect(
        routes.some((r) => match(r.url)),
        name,
      ).toBe(true)
    // Spot-check the enumeration against routes we know exist in src/*/routes.ts.
    const have = new Set(routes.map((r) => `${r.method} ${r.url}`))
    for (const r of [
      'POST /v1/rpc/:chain/:network',
      'GET /v1/tokens/:chain/balances/:address',
      'GET /v1/nfts/:chain/metadata/:contract/:token_id',
      'POST /v1/webhooks/:id/deliveries/:event_id/redeliver',
      'POST /v1/wallets/create',
      'GET /v1/gas/:chain/prices',
      'POST /admin/keys/:id/revoke',
    ])
      expect(have, r).toContain(r)
  })

  for (const [group, match] of GROUPS) {
    it(`answers hostile input with the error body: ${group}`, async () => {
      const mine = routes.filter((r) => match(r.url))
      const jobs = mine.flatMap((r) =>
        [...CASES, ...pathCases(r)].filter((c) => c.when?.(r) ?? true).map((c) => ({ r, c })),
      )
      const failures: string[] = []
      let next = 0
      const worker = async () => {
        while (next < jobs.length) {
          const { r, c } = jobs[next++]!
          const req = c.build(r, goodRequest(r))
          const where = `${r.method} ${r.url} [${c.name}] -> ${req.method} ${req.path.slice(0, 120)}`
          try {
            const ans = await send(origin, req)
            const bad = violation(ans, c.mention?.(r))
            if (bad) failures.push(`${where}\n    ${bad}; HTTP ${ans.status} ${ans.text.slice(0, 300)}`)
          } catch (err) {
            failures.push(`${where}\n    no answer: ${(err as Error).message}`)
          }
        }
      }
      await Promise.all([worker(), worker(), worker()])
      console.log(`${group}: ${mine.length} routes, ${jobs.length} requests, ${failures.length} failing`)
      expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
    }, 300_000)
  }

  it('answers protocol-level garbage (before any route) with the error body', async () => {
    const raw = (text: string) =>
      new Promise<Answer>((resolve, reject) => {
        const s = net.connect(Number(origin.port), origin.hostname)
        const chunks: Buffer[] = []
        const timer = setTimeout(() => {
          s.destroy()
          reject(new Error(`HANG: no answer within ${HANG_MS} ms`))
        }, HANG_MS)
        s.on('data', (c: Buffer) => chunks.push(c))
        s.on('error', () => {})
        s.on('close', () => {
          clearTimeout(timer)
          const all = Buffer.concat(chunks).toString('latin1')
          const [head = '', ...rest] = all.split('\r\n\r\n')
          resolve({
            status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0),
            contentType: /content-type: *([^\r\n]*)/i.exec(head)?.[1] ?? '',
            text: rest.join('\r\n\r\n'),
          })
        })
        s.write(text)
      })
    const host = `Host: ${origin.host}\r\nConnection: close\r\n`
    const cases: [string, string][] = [
      ['unknown method', `BREW /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`],
      ['headers over 16 KiB', `GET /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${'k'.repeat(20_000)}\r\n\r\n`],
      ['bad header name', `GET /v1/webhooks HTTP/1.1\r\n${host}bad header: x\r\n\r\n`],
      ['invalid Content-Length', `POST /v1/webhooks HTTP/1.1\r\n${host}content-length: abc\r\n\r\n{}`],
      [
        'Content-Length and chunked',
        `POST /v1/webhooks HTTP/1.1\r\n${host}content-length: 2\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
      ],
      [
        'bad chunk size',
        `POST /v1/webhooks HTTP/1.1\r\n${host}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      ],
      [
        'raw latin-1 byte in the path',
        `GET /v1/webhooks/\u00ff HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`,
      ],
      ['absolute-form garbage target', `GET http://%zz/ HTTP/1.1\r\n${host}\r\n\r\n`],
    ]
    const failures: string[] = []
    for (const [name, text] of cases) {
      try {
        const ans = await raw(text)
        const bad = ans.status === 0 ? 'connection closed without an HTTP answer' : violation(ans, undefined)
        if (bad) failures.push(`[${name}]\n    ${bad}; HTTP ${ans.status} ${ans.text.slice(0, 300)}`)
      } catch (err) {
        failures.push(`[${name}]\n    no answer: ${(err as Error).message}`)
      }
    }
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
  })
})
