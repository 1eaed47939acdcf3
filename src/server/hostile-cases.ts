import { randomBytes } from 'node:crypto'
import { DEFAULT_BODY_LIMIT } from './app.ts'

/**
 * The battery of hostile-input.test.ts: routes, cases, the raw sender and the checks on each
 * answer. Kept apart from the test so each file does one job.
 */
export const HANG_MS = 20_000
export const ADDR = '0x00000000000000000000000000000000000a11ce'
export const BAD_KEY = `hk_live_${'0'.repeat(40)}`
export const ADMIN_TOKEN = randomBytes(24).toString('base64url')

// ---------------------------------------------------------------------------------------------
// The battery. A case changes one thing about an otherwise well-formed request to a route.
// ---------------------------------------------------------------------------------------------

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
  ...(
    [
      ['transfers: garbage cursor', 'cursor=garbage', /cursor/],
      ['transfers: forged cursor', `cursor=${Buffer.from('t1.1.9.0.0').toString('base64url')}`, /cursor/],
      ['transfers: 10k-char cursor', `cursor=${'A'.repeat(10_000)}`, /cursor/],
      ['transfers: unknown category', 'category=erc20,erc9999', /category/],
      ['transfers: block range reversed', 'from_block=10&to_block=2', /from_block/],
      ['transfers: block 1e30', `to_block=1${'0'.repeat(30)}`, /to_block/],
    ] as const
  ).map(
    ([name, q, re]): Case => ({
      name,
      when: (r) => r.url.startsWith('/v1/transfers/'),
      build: (_, g) => withQuery(g, q),
      mention: () => re,
    }),
  ),
  {
    name: 'alchemy: unknown network',
    when: (r) => r.params.includes('apiKey') && r.params.includes('network'),
    build: (r, g) => ({ ...g, path: fillPath(r, { network: 'eth-nowhere' }) }),
    mention: () => /eth-nowhere/,
  },
  {
    // Each member answers its own -32601/-32602 in a 200 (alchemy.sdk tests check the codes).
    name: 'alchemy JSON-RPC: hostile params to every alchemy_* row',
    when: isAlchemyRpc,
    build: (_, g) => {
      const many = Array.from({ length: 1501 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
      const calls: [string, unknown][] = [
        ['alchemy_getTokenBalances', [ADDR, many]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { maxCount: -1 }]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { maxCount: 1e300 }]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { maxCount: '0xffffffffffffffffffff' }]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { pageKey: 'garbage' }]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { pageKey: 'A'.repeat(10_000) }]],
        ['alchemy_getTokenBalances', [ADDR, 'erc20', { pageKey: { __proto__: 1 } }]],
        ['alchemy_getTokenBalances', [ADDR, [ADDR, null, 7]]],
        ['alchemy_getTokenBalances', [{ toString: 1 }]],
        ['alchemy_getTokenBalances', 'not-an-array'],
        ['alchemy_getTokenMetadata', [{}]],
        ['alchemy_getTransactionReceipts', [{ blockNumber: `0x${'f'.repeat(100)}` }]],
        ['alchemy_getTransactionReceipts', [{ blockHash: 1, blockNumber: 'latest' }]],
        ['alchemy_getAssetTransfers', [{ maxCount: '-0x1', pageKey: 'garbage', category: ['x'] }]],
        ['alchemy_getAssetTransfers', [{ category: ['erc20'], maxCount: -1 }]],
        ['alchemy_getAssetTransfers', [{ category: ['erc20'], maxCount: `0x${'f'.repeat(100)}` }]],
        ['alchemy_getAssetTransfers', [{ category: ['erc20'], pageKey: 'A'.repeat(10_000) }]],
        ['alchemy_getAssetTransfers', [{ category: ['erc20'], contractAddresses: many }]],
        [
          'alchemy_getAssetTransfers',
          [{ category: ['erc20'], fromBlock: `0x${'f'.repeat(100)}`, toBlock: {} }],
        ],
        ['alchemy_getAssetTransfers', [{ category: ['internal', 'specialnft'], fromAddress: ADDR }]],
        ['alchemy_requestGasAndPaymasterAndData', [{ policyId: {}, userOperation: 'x' }]],
        ['rundler_maxPriorityFeePerGas', [1, 2, 3]],
        ['eth_sendUserOperation', [{ sender: 1 }, 'x']],
        ['alchemy_simulateAssetChanges', [{}]],
        ['alchemy___proto__', []],
        ['alchemy_constructor', []],
      ]
      return json(
        g,
        JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params }))),
      )
    },
  },
  {
    name: 'alchemy: wrong key in the path',
    when: (r) => r.params.includes('apiKey'),
    build: (r, g) => ({ ...g, path: fillPath(r, { apiKey: BAD_KEY }), headers: {} }),
    mention: () => /API key/i,
  },
  ...(
    [
      ['alchemy NFT: unknown method', 'getNFTSales', '', /getNFTSales.*not served/],
      ['alchemy NFT: method constructor', 'constructor', '', /not served/],
      ['alchemy NFT: method __proto__', '__proto__', '', /not served/],
      ['alchemy NFT: garbage pageKey', 'getNFTsForOwner', `owner=${ADDR}&pageKey=garbage`, /pageKey/],
      [
        'alchemy NFT: forged pageKey',
        'getNFTsForContract',
        `contractAddress=${ADDR}&pageKey=${Buffer.from(`t1.${'9'.repeat(79)}`).toString('base64url')}`,
        /pageKey/,
      ],
      [
        'alchemy NFT: 10k-char pageKey',
        'getOwnersForContract',
        `contractAddress=${ADDR}&pageKey=${'A'.repeat(10_000)}`,
        /pageKey/,
      ],
      [
        'alchemy NFT: 46 contractAddresses',
        'getNFTsForOwner',
        `owner=${ADDR}${`&contractAddresses[]=${ADDR}`.repeat(46)}`,
        /contractAddresses/,
      ],
      ['alchemy NFT: owner twice', 'getNFTsForOwner', `owner=${ADDR}&owner=${ADDR}`, /owner/],
      ['alchemy NFT: pageSize 1e9', 'getNFTsForOwner', `owner=${ADDR}&pageSize=1000000000`, /pageSize/],
      [
        'alchemy NFT: tokenId 2^256',
        'getNFTMetadata',
        `contractAddress=${ADDR}&tokenId=${2n ** 256n}`,
        /tokenId/,
      ],
      ['alchemy NFT: tokenId as a list', 'getOwnersForNFT', `contractAddress=${ADDR}&tokenId[]=1`, /tokenId/],
      ['alchemy NFT: batch by GET', 'getNFTMetadataBatch', 'tokens=1', /POST/],
    ] as const
  ).map(
    ([name, method, q, re]): Case => ({
      name,
      when: (r) => r.url.endsWith('/:method') && r.method === 'GET',
      build: (r, g) => ({ ...g, path: `${fillPath(r, { method })}${q ? `?${q}` : ''}` }),
      mention: () => re,
    }),
  ),
  {
    name: 'alchemy NFT: batch of 101 tokens',
    when: (r) => r.url.endsWith('/:method') && r.method === 'POST',
    build: (r, g) =>
      json(
        { ...g, path: fillPath(r, { method: 'getNFTMetadataBatch' }) },
        JSON.stringify({ tokens: Array(101).fill({ contractAddress: ADDR, tokenId: '1' }) }),
      ),
    mention: () => /tokens/,
  },
  {
    name: 'alchemy NFT: batch with garbage entries',
    when: (r) => r.url.endsWith('/:method') && r.method === 'POST',
    build: (r, g) =>
      json(
        { ...g, path: fillPath(r, { method: 'getContractMetadataBatch' }) },
        JSON.stringify({ contractAddresses: [ADDR, 1, null, { a: 1 }] }),
      ),
    mention: () => /contractAddresses/,
  },
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

// ---------------------------------------------------------------------------------------------
// The harness: raw node:http (fetch would normalise `..` and refuse some bytes), one connection
// per request, a hang detector per request.
// ---------------------------------------------------------------------------------------------
