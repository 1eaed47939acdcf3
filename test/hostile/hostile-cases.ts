import { FORM_LIMIT } from '../../src/dashboard/register.ts'
import { DEFAULT_BODY_LIMIT } from '../../src/server/app.ts'
import {
  ADDR,
  authMention,
  BAD_KEY,
  type Case,
  fillPath,
  hasBody,
  isRpc,
  json,
  jsonMention,
  keyed,
  type Route,
  withQuery,
} from './hostile-request.ts'
import { SURFACE_CASES } from './hostile-surface-cases.ts'

/**
 * The battery of hostile-input.test.ts: the cases every route gets (auth, body, content type,
 * query, method, JSON-RPC) and the path-parameter cases. A case changes one thing about an
 * otherwise well-formed request to a route.
 */

/** The body limit a route's refusal must name: the dashboard's forms have their own. */
const limitOf = (r: Route) => (r.url.startsWith('/dashboard') ? FORM_LIMIT : DEFAULT_BODY_LIMIT)

/** Hostile values for one path parameter at a time (raw, already URL-encoded where needed). */
export const PATH_VALUES: ReadonlyArray<readonly [string, string]> = [
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

export const CASES: Case[] = [
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
    name: 'hostile X-Halyard-Admin-Token',
    build: (_, g) => ({
      ...g,
      headers: { ...g.headers, 'x-halyard-admin-token': `\u00ff;"<>${'t'.repeat(10_000)}` },
    }),
  },
  {
    name: 'duplicated X-Halyard-Admin-Token',
    build: (_, g) => ({ ...g, headers: { ...g.headers, 'x-halyard-admin-token': ['a', 'b'] } }),
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
    mention: (r) => (hasBody(r) ? new RegExp(`${limitOf(r)}-byte`) : undefined),
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
  ...SURFACE_CASES,
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
    name: 'paymaster calls with garbage params',
    when: isRpc,
    build: (_, g) =>
      json(
        g,
        JSON.stringify(
          [
            [],
            [{ sender: 1 }, 'x', '0x1', null],
            [{}, '0x0000000071727de22e5e9d8baf0edac6f37da032', 1, 'ctx'],
          ].map((params, id) => ({ jsonrpc: '2.0', id, method: 'pm_getPaymasterData', params })),
        ),
      ),
  },
  {
    name: 'operator controls, node-key and node-admin methods with garbage params',
    when: isRpc,
    build: (_, g) =>
      json(
        g,
        JSON.stringify(
          [
            'debug_bundler_clearState',
            'debug_bundler_setReputation',
            'debug_bundler_dumpMempool',
            'eth_sendTransactionSync',
            'eth_signTypedData',
            'eth_sendRawTransactionConditional',
            'debug_setHead',
            'debug_traceCall',
            'trace_rawTransaction',
            'evm_revert',
            'eth_getX\u0000',
          ].flatMap((method, i) =>
            [[], [null, { __proto__: 1 }], ['0x'.padEnd(5_000, 'f'), [], 1e308]].map((params, j) => ({
              jsonrpc: '2.0',
              id: i * 10 + j,
              method,
              params,
            })),
          ),
        ),
      ),
  },
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

export const ALL_METHODS = ['PUT', 'PATCH', 'DELETE', 'POST', 'GET', 'OPTIONS']
/** Methods registered per route URL (filled by the test from the running app). */
export const registered = new Map<string, Set<string>>()
export const unusedMethod = (r: Route) => ALL_METHODS.find((m) => !registered.get(r.url)?.has(m)) ?? 'OPTIONS'

/** Path-parameter cases: one per (parameter, hostile value). */
export function pathCases(r: Route): Case[] {
  return r.params.flatMap((p) =>
    PATH_VALUES.map(
      ([label, value]): Case => ({
        name: `:${p} = ${label}`,
        build: (route, g) => ({ ...g, path: fillPath(route, { [p]: value }) }),
      }),
    ),
  )
}
