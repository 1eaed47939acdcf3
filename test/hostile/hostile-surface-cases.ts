import { FORM_LIMIT } from '../../src/dashboard/register.ts'
import {
  ADDR,
  BAD_KEY,
  type Case,
  fillPath,
  isAlchemyRpc,
  json,
  type Route,
  withQuery,
} from './hostile-request.ts'

/**
 * Cases aimed at one surface's own rules (the transfers cursor and filters, the Alchemy-compatible
 * root's network, key-in-path, JSON-RPC and NFT routes). Kept apart from the generic battery in
 * hostile-cases.ts, which spreads them in at their place.
 */
const isDashboard = (r: Route) => r.url === '/dashboard' || r.url.startsWith('/dashboard/')
const form = { 'content-type': 'application/x-www-form-urlencoded' }

/**
 * The dashboard trusts only its public URL (the sweep's server: its listener) and X-Forwarded-*
 * only from trusted proxies (none here): forged ones are refused or ignored, never a 5xx.
 */
const DASHBOARD_CASES: Case[] = [
  ...(
    [
      ['another site', 'login.attacker.example'],
      ['the right host on another port', '127.0.0.1:1'],
      ['a path and userinfo', 'user@127.0.0.1/evil?x#y'],
      ['10k chars', `${'h'.repeat(10_000)}.example`],
      ['brackets', '[not-ipv6]:80'],
    ] as const
  ).map(
    ([name, host]): Case => ({
      name: `dashboard: forged Host (${name})`,
      when: isDashboard,
      build: (_, g) => ({ ...g, headers: { ...g.headers, host } }),
      mention: () => /not this dashboard's host/,
    }),
  ),
  {
    name: 'dashboard: forged X-Forwarded-For/-Proto/-Host from an untrusted peer',
    when: isDashboard,
    build: (_, g) => ({
      ...g,
      headers: {
        ...g.headers,
        'x-forwarded-for': ['garbage, ::ffff:999.1.1.1, 203.0.113.7', '1.2.3.4'],
        'x-forwarded-proto': 'gopher, https',
        'x-forwarded-host': 'login.attacker.example',
        forwarded: 'for=203.0.113.7;proto=https;host=login.attacker.example',
      },
    }),
  },
  {
    name: 'dashboard: 1,500 X-Forwarded-For entries',
    when: isDashboard,
    build: (_, g) => ({
      ...g,
      headers: { ...g.headers, 'x-forwarded-for': Array(1_500).fill('10.0.0.1').join(',') },
    }),
  },
  {
    name: `dashboard: form body over the ${FORM_LIMIT}-byte limit`,
    when: (r) => isDashboard(r) && r.method === 'POST',
    build: (_, g) => json(g, `a=${'x'.repeat(FORM_LIMIT)}`, form),
    mention: () => new RegExp(`${FORM_LIMIT}-byte`),
  },
]

export const SURFACE_CASES: Case[] = [
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
  ...DASHBOARD_CASES,
  // CORS preflights (http/cors.ts) and Origin headers: answered, never a 5xx, whatever they carry.
  ...(
    [
      ['preflight: 8 KiB Origin', { origin: `https://${'a'.repeat(8000)}.example` }],
      ['preflight: Origin not an origin', { origin: 'javascript:alert(1)//\t"<>' }],
      ['preflight: Origin twice', { origin: ['https://a.example', 'https://b.example'] }],
      [
        'preflight: garbage request method and headers',
        {
          origin: 'null',
          'access-control-request-method': 'BREW\t\u00ff',
          'access-control-request-headers': `${'x-'.repeat(3000)}, ,,\t`,
        },
      ],
    ] as const
  ).map(
    ([name, headers]): Case => ({
      name,
      when: (r) => r.url.startsWith('/v1/'),
      build: (_, g) => ({
        ...g,
        method: 'OPTIONS',
        headers: { ...headers } as Record<string, string | string[]>,
      }),
    }),
  ),
  {
    name: 'garbage Origin on an API request',
    when: (r) => r.url.startsWith('/v1/'),
    build: (_, g) => ({ ...g, headers: { ...g.headers, origin: `\u00ff${'o'.repeat(5000)}` } }),
  },
  // Per-key allowlists (admin API): every hostile entry is a 400 naming its list.
  ...(
    [
      [
        'allowlists: NUL and overlong origins',
        { allowed_origins: ['https://a.example\u0000', `https://${'a'.repeat(2000)}`] },
      ],
      [
        'allowlists: broken origins',
        { allowed_origins: ['*.', '*', 'http://[::1', 'https://a.example/path?x#y'] },
      ],
      ['allowlists: broken CIDRs', { allowed_ips: ['1.2.3.4/-1', '::/0/0', '10.0.0.0/33', '1.2.3'] }],
      [
        'allowlists: broken addresses',
        { allowed_contracts: ['0x', `0x${'g'.repeat(40)}`, '0x00000000000000000000000000000000000000aA'] },
      ],
      ['allowlists: unknown methods', { allowed_methods: ['__proto__', 'constructor', 'eth call'] }],
      ['allowlists: 5,001 entries', { allowed_ips: Array(5001).fill('10.0.0.1') }],
      ['allowlists: 101 distinct IPs', { allowed_ips: Array.from({ length: 101 }, (_, i) => `10.0.1.${i}`) }],
      ['allowlists: not arrays', { allowed_origins: 'https://a.example', allowed_ips: { a: 1 } }],
      ['allowlists: entries not strings', { allowed_contracts: [1, null, {}] }],
    ] as const
  ).map(
    ([name, lists]): Case => ({
      name,
      when: (r) =>
        (r.method === 'PATCH' && r.url === '/admin/keys/:id') ||
        (r.method === 'POST' && r.url === '/admin/keys'),
      build: (r, g) =>
        json(
          g,
          JSON.stringify(
            r.method === 'POST' ? { account: 'hostile@example.com', env: 'live', ...lists } : lists,
          ),
        ),
      mention: () => /allowed_|account/,
    }),
  ),
  // The dashboard's allowlist form, signed out: refused before the form is read, never a 5xx.
  {
    name: 'dashboard allowlists form: hostile fields',
    when: (r) => r.method === 'POST' && r.url.endsWith('/api-keys/:id/access'),
    build: (_, g) => ({
      ...g,
      headers: { ...g.headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: `allowed_origins=${'%00'.repeat(100)}&allowed_ips=${'x'.repeat(70_000)}&allowed_methods=a&allowed_methods=b&_csrf=x`,
    }),
  },
]
