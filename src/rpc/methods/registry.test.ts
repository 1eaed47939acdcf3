import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { Network } from '../../chains/registry.ts'
import { describeMethod, registries } from './registry.ts'

/**
 * The registry against the tables it replaced. test/fixtures/rpc/registry.fixture.txt was generated from the old
 * tables (auth/scopes.ts RPC_METHOD_SCOPES, the compute-unit table of limits/, the method policy
 * table of rpc/, rpc/cache-policy.ts, the pool's STICKY/WRITES/BROADCAST and rpc/service.ts UNSHARED) before
 * they were deleted: every method name they held, plus hostile and family names, on a mainnet,
 * a devnet, a devnet with debug and destructive methods enabled, and Solana. Deliberate changes
 * since: eth_sendUnsignedTransaction is a row (its label is its name) served on devnets only;
 * every forwarded method is read, write or refused, so unlisted eth_ names outside the eth_get*
 * rule (eth_foo) are refused, and debug_/trace_ names outside the read allowlist (debug_x,
 * debug_setHead) are refused even where debugMethods is on; net_peerCount and web3_sha3 are
 * rows; evm_snapshot/evm_revert need devMethods.destructive; and the names added at the end
 * of each network (the node-key, write and debug methods) are covered.
 */

const net = (network: string, kind: 'evm' | 'solana', isDevnet: boolean, config: object) =>
  ({
    chain: 'x',
    network,
    slug: `x-${network}`,
    kind,
    isDevnet,
    isMainnet: network === 'mainnet',
    config,
  }) as unknown as Network

const NETWORKS: Record<string, Network> = {
  mainnet: net('mainnet', 'evm', false, {}),
  devnet: net('devnet', 'evm', true, {}),
  debug: net('devnet', 'evm', true, { debugMethods: true, devMethods: { destructive: true } }),
  solana: net('devnet', 'solana', false, {}),
}

/** Params the costs and cache plans are evaluated at: head, a past block, a log range, Solana slots. */
const PARAMS: unknown[][] = [
  ['latest', 'latest', 'latest'],
  ['0x1', '0x1', '0x1'],
  [{ fromBlock: '0x1', toBlock: '0x2' }],
  [5, { commitment: 'finalized' }, { commitment: 'finalized' }],
  [5, 6, { commitment: 'confirmed' }],
]

function verdict(n: Network, name: string): string {
  const r = registries[n.kind].lookup(n, name)
  if (!r.ok) return `refused ${r.error.message}`
  const s = r.spec
  const plans = PARAMS.map((p) => (s.coalesce ? s.cache(p).kind : 'none'))
  const u = s.upstream
  const policy = `${u.sticky ? 'S' : '-'}${u.write ? 'W' : '-'}${u.broadcast ? 'B' : '-'}`
  return `${s.scope} cu=${s.cost(PARAMS[0]!)}/${s.cost(PARAMS[1]!)} cache=${plans.join(',')} ${s.coalesce ? 'shared' : 'own'} ${policy} label=${s.label}`
}

const fixture = readFileSync(
  new URL('../../../test/fixtures/rpc/registry.fixture.txt', import.meta.url),
  'utf8',
)
  .trim()
  .split('\n')
  .map((line) => {
    const [network, name, expected] = line.split('\t') as [string, string, string]
    return { network, name: JSON.parse(name) as string, expected }
  })

describe('JSON-RPC method registry', () => {
  it('answers as the old tables did for every method they named, on every kind of network', () => {
    expect(fixture.length).toBeGreaterThan(600)
    const differ = fixture
      .map((f) => ({ ...f, got: verdict(NETWORKS[f.network]!, f.name) }))
      .filter((f) => f.got !== f.expected)
      .map((f) => `${f.network} ${f.name}: expected ${f.expected}, got ${f.got}`)
    expect(differ).toEqual([])
  })

  it('gives the pool the same policy and label as a lookup, and a plain forward for unknown names', () => {
    for (const spec of registries.evm.specs()) {
      expect(describeMethod('evm', spec.name)).toEqual({ upstream: spec.upstream, label: spec.label })
    }
    expect(describeMethod('evm', 'debug_traceCall')).toMatchObject({ label: 'other' })
    expect(describeMethod('solana', '__proto__')).toEqual({
      upstream: { sticky: false, write: false, broadcast: false },
      label: 'other',
    })
  })

  it('serves eth_get* names outside the rows as "other" at 20 CU, however many are tried', () => {
    const devnet = NETWORKS.devnet!
    for (let i = 0; i < 2000; i++) expect(registries.evm.lookup(devnet, `eth_getX${i}`).ok).toBe(true)
    expect(verdict(devnet, 'eth_getX1999')).toMatch(/^rpc:read cu=20\/20 .* label=other$/)
  })

  it('puts every EVM method into one class: read, write or refused, with the scope its class needs', () => {
    const debug = NETWORKS.debug!
    const classOf = (name: string) => {
      const spec = registries.evm.describe(name)
      return spec === undefined ? 'unknown' : spec.access
    }
    for (const name of [
      'eth_getBalance',
      'eth_getHeaderByNumber',
      'debug_traceCall',
      'trace_block',
      'web3_sha3',
    ])
      expect(classOf(name), name).toBe('read')
    for (const name of [
      'eth_sendRawTransaction',
      'eth_sendRawTransactionConditional',
      'eth_sendBundle',
      'anvil_mine',
    ])
      expect(classOf(name), name).toBe('write')
    const refused = [
      'eth_sendTransaction',
      'eth_sendTransactionSync',
      'eth_sendTransactionAsync',
      'eth_sign',
      'eth_signTypedData',
      'eth_signTypedData_v1',
      'eth_sendFoo',
      'eth_submitWork',
      'eth_getSignedX',
      'debug_setHead',
      'debug_setGCPercent',
      'debug_cpuProfile',
      'debug_startGoTrace',
      'debug_freeOSMemory',
      'debug_chaindbCompact',
      'debug_traceBlockToFile',
      'debug_traceSetHead',
      'trace_setX',
    ]
    for (const name of refused) {
      expect(classOf(name), name).toBe('refused')
      const r = registries.evm.lookup(debug, name)
      expect(r.ok, name).toBe(false)
      if (!r.ok) expect(r.error).toMatchObject({ code: -32601, message: expect.stringContaining(name) })
    }
    expect(registries.evm.describe('eth_foo')).toBeUndefined()
    for (const spec of registries.evm.specs()) {
      if (spec.access === 'read') expect(spec.scope, spec.name).toBe('rpc:read')
      if (spec.access === 'write') expect(spec.scope, spec.name).toBe('rpc:write')
      if (spec.access === 'refused') expect(spec.refusal, spec.name).toBeDefined()
    }
  })
})
