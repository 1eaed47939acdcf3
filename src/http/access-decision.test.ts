import { parseTransaction, serializeTransaction } from 'viem'
import { describe, expect, it } from 'vitest'
import { type AllowlistValues, compileAllowlists, parseAllowlist } from '../auth/allowlists.ts'
import { SCOPES, type Scope } from '../auth/scopes.ts'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { effectiveLimits } from '../limits/plans.ts'
import { decideCall, decideRequest, type RequestFacts } from './access-decision.ts'

/**
 * The access decision, rule by rule, as a table: every transport asks these two functions
 * (the transports' own tests: src/server/allowlists.test.ts, the browser test), so each rule is
 * written and tested here once.
 */

const known = () => true
function caller(
  o: { env?: 'live' | 'test'; scopes?: Scope[]; lists?: Partial<AllowlistValues> } = {},
): Caller {
  const lists = { origins: [], ips: [], contracts: [], methods: [], ...o.lists }
  const parsed = {
    origins: parseAllowlist('origins', lists.origins, known),
    ips: parseAllowlist('ips', lists.ips, known),
    contracts: parseAllowlist('contracts', lists.contracts, known),
    methods: parseAllowlist('methods', lists.methods, known),
  }
  return {
    keyId: 'key_1',
    env: o.env ?? 'live',
    scopes: new Set(o.scopes ?? SCOPES),
    accountId: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    limits: effectiveLimits('free', { rps: null, rpd: null, cups: null }),
    unlimited: false,
    allow: compileAllowlists(parsed),
  }
}

const net = (isMainnet: boolean) =>
  ({ chain: 'ethereum', network: isMainnet ? 'mainnet' : 'devnet', isMainnet }) as unknown as Network

const A = '0x00000000000000000000000000000000000000aa'
const B = '0x00000000000000000000000000000000000000bb'

type Row = [string, Partial<RequestFacts> & { c: Caller }, string | undefined]

describe('decideRequest: one rule per row', () => {
  const base = { scope: 'rpc:read' as const, what: 'JSON-RPC', origin: undefined, ip: '198.51.100.7' }
  const rows: Row[] = [
    ['no lists: allowed', { c: caller() }, undefined],
    ['test key on a devnet', { c: caller({ env: 'test' }), network: net(false) }, undefined],
    [
      'test key on mainnet',
      { c: caller({ env: 'test' }), network: net(true) },
      'test keys cannot access mainnet',
    ],
    [
      'missing scope',
      { c: caller({ scopes: ['data:read'] }) },
      'lacks the rpc:read scope required for JSON-RPC',
    ],
    [
      'any of several scopes',
      { c: caller({ scopes: ['rpc:write'] }), scope: ['rpc:read', 'rpc:write'] },
      undefined,
    ],
    ['any-key', { c: caller({ scopes: [] }), scope: 'any-key' }, undefined],
    [
      'origin list, exact match',
      { c: caller({ lists: { origins: ['https://app.example.com'] } }), origin: 'https://app.example.com' },
      undefined,
    ],
    [
      'origin list, default port written out',
      {
        c: caller({ lists: { origins: ['https://app.example.com:443'] } }),
        origin: 'https://app.example.com',
      },
      undefined,
    ],
    [
      'origin list, other origin',
      { c: caller({ lists: { origins: ['https://app.example.com'] } }), origin: 'https://evil.example' },
      "the origin https://evil.example is not on this API key's allowed origins list (allowed_origins)",
    ],
    [
      'origin list, other scheme',
      { c: caller({ lists: { origins: ['https://app.example.com'] } }), origin: 'http://app.example.com' },
      'allowed_origins',
    ],
    [
      'origin list, no Origin header',
      { c: caller({ lists: { origins: ['https://app.example.com'] } }) },
      'the request has no Origin header',
    ],
    [
      'wildcard, subdomain',
      { c: caller({ lists: { origins: ['*.example.com'] } }), origin: 'https://a.b.example.com:8443' },
      undefined,
    ],
    [
      'wildcard, not the apex',
      { c: caller({ lists: { origins: ['*.example.com'] } }), origin: 'https://example.com' },
      'allowed_origins',
    ],
    [
      'wildcard, look-alike domain',
      { c: caller({ lists: { origins: ['*.example.com'] } }), origin: 'https://evilexample.com' },
      'allowed_origins',
    ],
    [
      'wildcard with scheme, other scheme',
      { c: caller({ lists: { origins: ['https://*.example.com'] } }), origin: 'http://a.example.com' },
      'allowed_origins',
    ],
    [
      'origin "null"',
      { c: caller({ lists: { origins: ['https://app.example.com'] } }), origin: 'null' },
      'allowed_origins',
    ],
    ['IP list, single address', { c: caller({ lists: { ips: ['198.51.100.7'] } }) }, undefined],
    ['IP list, CIDR', { c: caller({ lists: { ips: ['198.51.100.0/24'] } }) }, undefined],
    [
      'IP list, outside',
      { c: caller({ lists: { ips: ['10.0.0.0/8'] } }) },
      "the client address 198.51.100.7 is not on this API key's allowed IPs list (allowed_ips)",
    ],
    ['IPv6 CIDR', { c: caller({ lists: { ips: ['2001:db8::/32'] } }), ip: '2001:db8::1' }, undefined],
    ['IPv6 outside', { c: caller({ lists: { ips: ['2001:db8::/32'] } }), ip: '2001:db9::1' }, 'allowed_ips'],
    [
      'IPv4-mapped IPv6 peer',
      { c: caller({ lists: { ips: ['127.0.0.1'] } }), ip: '::ffff:127.0.0.1' },
      undefined,
    ],
    ['unknown peer address', { c: caller({ lists: { ips: ['127.0.0.1'] } }), ip: undefined }, 'allowed_ips'],
    [
      'the lists come before the scope',
      { c: caller({ scopes: [], lists: { origins: ['https://a.example'] } }), origin: 'https://b.example' },
      'allowed_origins',
    ],
    [
      'method and contract lists do not refuse a request',
      { c: caller({ lists: { methods: ['eth_chainId'], contracts: [A] } }) },
      undefined,
    ],
  ]
  it.each(rows)('%s', (_name, facts, refusal) => {
    const { c, ...rest } = facts
    const r = decideRequest({ ...base, caller: c, ...rest })
    if (refusal === undefined) expect(r).toBeUndefined()
    else {
      expect(r?.status).toBe(403)
      expect(r?.message).toContain(refusal)
    }
  })
})

const rawTo = (to: `0x${string}` | undefined) =>
  serializeTransaction(
    {
      chainId: 1,
      type: 'eip1559',
      to,
      value: 0n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      nonce: 0,
      gas: 21000n,
    },
    { r: `0x${'1'.repeat(64)}`, s: `0x${'2'.repeat(64)}`, yParity: 0 },
  )

describe('decideCall: one rule per row', () => {
  const contracts = caller({ lists: { contracts: [A] } })
  const rows: [string, Caller, string, Scope, unknown[], string | undefined][] = [
    ['no lists', caller(), 'eth_call', 'rpc:read', [{ to: B }], undefined],
    [
      'method scope',
      caller({ scopes: ['rpc:read'] }),
      'eth_sendRawTransaction',
      'rpc:write',
      [],
      'lacks the rpc:write scope',
    ],
    [
      'method list, listed',
      caller({ lists: { methods: ['eth_chainId'] } }),
      'eth_chainId',
      'rpc:read',
      [],
      undefined,
    ],
    [
      'method list, not listed',
      caller({ lists: { methods: ['eth_chainId'] } }),
      'eth_blockNumber',
      'rpc:read',
      [],
      "the method eth_blockNumber is not on this API key's allowed methods list (allowed_methods)",
    ],
    [
      'eth_call to a listed contract',
      contracts,
      'eth_call',
      'rpc:read',
      [{ to: A.toUpperCase().replace('0X', '0x') }, 'latest'],
      undefined,
    ],
    ['eth_call elsewhere', contracts, 'eth_call', 'rpc:read', [{ to: B }], `the contract ${B} is not on`],
    ['eth_call without to', contracts, 'eth_call', 'rpc:read', [{ data: '0x' }], 'allowed_contracts'],
    ['eth_estimateGas elsewhere', contracts, 'eth_estimateGas', 'rpc:read', [{ to: B }], 'allowed_contracts'],
    [
      'eth_createAccessList elsewhere',
      contracts,
      'eth_createAccessList',
      'rpc:read',
      [{ to: B }],
      'allowed_contracts',
    ],
    ['eth_getLogs, listed address', contracts, 'eth_getLogs', 'rpc:read', [{ address: A }], undefined],
    [
      'eth_getLogs, address array',
      contracts,
      'eth_getLogs',
      'rpc:read',
      [{ address: [A, B] }],
      'allowed_contracts',
    ],
    [
      'eth_getLogs without an address filter',
      contracts,
      'eth_getLogs',
      'rpc:read',
      [{ fromBlock: '0x0' }],
      'needs an address filter',
    ],
    [
      'eth_subscribe logs elsewhere',
      contracts,
      'eth_subscribe',
      'rpc:read',
      ['logs', { address: B }],
      'allowed_contracts',
    ],
    ['eth_subscribe newHeads', contracts, 'eth_subscribe', 'rpc:read', ['newHeads'], undefined],
    [
      'raw transaction to a listed contract',
      contracts,
      'eth_sendRawTransaction',
      'rpc:write',
      [rawTo(A)],
      undefined,
    ],
    [
      'raw transaction elsewhere',
      contracts,
      'eth_sendRawTransaction',
      'rpc:write',
      [rawTo(B)],
      'allowed_contracts',
    ],
    [
      'raw contract creation',
      contracts,
      'eth_sendRawTransaction',
      'rpc:write',
      [rawTo(undefined)],
      'allowed_contracts',
    ],
    ['raw garbage', contracts, 'eth_sendRawTransaction', 'rpc:write', ['0xdeadbeef'], 'allowed_contracts'],
    ['a read the list does not govern', contracts, 'eth_getBalance', 'rpc:read', [B, 'latest'], undefined],
  ]
  it.each(rows)('%s', (_name, c, method, scope, params, refusal) => {
    const r = decideCall({ caller: c, method, scope, params })
    if (refusal === undefined) expect(r).toBeUndefined()
    else expect(r?.message).toContain(refusal)
  })

  it('the raw transaction fixture decodes to its target', () => {
    expect(parseTransaction(rawTo(A)).to).toBe(A)
  })
})

describe('allowlist entries are validated, each bad one named', () => {
  const bad: [Parameters<typeof parseAllowlist>[0], string, string][] = [
    ['origins', 'app.example.com', 'allowed_origins: entry "app.example.com" is not an origin'],
    ['origins', 'https://app.example.com/path', 'allowed_origins'],
    ['origins', 'ftp://x.example', 'allowed_origins'],
    ['origins', '*', 'allowed_origins'],
    ['ips', '10.0.0.0/33', 'allowed_ips: entry "10.0.0.0/33"'],
    ['ips', '300.1.1.1', 'allowed_ips'],
    ['ips', '2001:db8::/129', 'allowed_ips'],
    ['contracts', '0x1234', 'allowed_contracts: entry "0x1234"'],
    ['contracts', '0x00000000000000000000000000000000000000aA', 'allowed_contracts'],
    ['methods', 'eth call', 'allowed_methods'],
  ]
  it.each(bad)('%s %s', (list, entry, message) => {
    expect(() => parseAllowlist(list, [entry], known)).toThrow(message)
  })
  it('an unknown method is refused', () => {
    expect(() => parseAllowlist('methods', ['eth_nope'], (m) => m !== 'eth_nope')).toThrow(
      'allowed_methods: entry "eth_nope" is not a JSON-RPC method this server knows',
    )
  })
  it('normalises: lowercase, network address of a CIDR, default port, duplicates', () => {
    expect(
      parseAllowlist('origins', ['HTTPS://App.Example.com:443', 'https://app.example.com'], known),
    ).toEqual(['https://app.example.com'])
    expect(parseAllowlist('ips', ['10.1.2.3/8', '::ffff:127.0.0.1'], known)).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
    ])
    expect(parseAllowlist('contracts', [A.replace('aa', 'AA')], known)).toEqual([A])
  })
  it('limits list sizes', () => {
    const many = Array.from({ length: 101 }, (_, i) => `10.0.${Math.floor(i / 250)}.${i % 250}`)
    expect(() => parseAllowlist('ips', many, known)).toThrow('allowed_ips: at most 100 entries')
  })
})
