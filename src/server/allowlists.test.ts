import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawClient, refusedUpgrade } from '../../test/fixtures/ws/test-client.ts'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import type { AllowlistInput } from '../auth/service.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/**
 * The per-key allowlists on every transport, each decided by http/access-decision.ts (whose
 * table test holds the rules): HTTP JSON-RPC single calls and batch items, the fast lane, REST,
 * WebSocket upgrades and messages, the Alchemy-compatible root, the bundler and paymaster, and
 * the admin API that sets them. Plus CORS on the API and none on the dashboard.
 */

const APP = 'https://app.example.com'

interface Frame {
  result?: unknown
  error: { code: number; message: string }
}
const err = (r: { json: unknown }) => (r.json as Frame).error
const items = (r: { json: unknown }) => r.json as Frame[]
const A = '0x00000000000000000000000000000000000000aa'
const B = '0x00000000000000000000000000000000000000bb'

describe('per-key allowlists on every transport', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let rpcUrl: string
  let wsUrl: string
  const ADMIN = 'admin-token-for-allowlists-test'

  /** A live key on an enterprise account with these lists. */
  async function key(allow: AllowlistInput): Promise<{ key: string; id: string; email: string }> {
    const auth = h.halyard.ctx.auth
    const email = `al-${Math.random().toString(36).slice(2)}@test.local`
    await auth.createAccount(email, 'enterprise')
    const k = await auth.createKey({ accountEmail: email, env: 'live', allow })
    return { key: k.key, id: k.id, email }
  }
  const lanes = async () => (await h.halyard.ctx.metrics.fastLaneRequests.get()).values[0]?.value ?? 0

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage, extra: { adminToken: ADMIN } })
    rpcUrl = `${h.baseUrl}/rpc/ethereum/devnet`
    wsUrl = `${h.halyard.wsOrigin}/v1/ws/ethereum/devnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('origin list: JSON-RPC without Origin or from another origin is 403 naming the list; the listed origin works', async () => {
    const { key: k } = await key({ origins: [APP] })
    const none = await postRpc(rpcUrl, k, call('eth_chainId'))
    expect(none.status).toBe(403)
    expect(err(none).message).toContain('allowed_origins')
    const other = await postRpc(rpcUrl, k, call('eth_chainId'), { origin: 'https://evil.example' })
    expect(other.status).toBe(403)
    expect(err(other).message).toContain('the origin https://evil.example is not on')
    // A browser can read the refusal: CORS headers on the 403 too.
    expect(other.headers.get('access-control-allow-origin')).toBe('https://evil.example')
    const ok = await postRpc(rpcUrl, k, call('eth_chainId'), { origin: APP })
    expect(ok.status).toBe(200)
    expect((ok.json as unknown as Frame).result).toBe(`0x${anvil.chainId.toString(16)}`)
  })

  it('fast lane: a cached key from a refused origin or IP is still refused; a listed origin goes through the lane with CORS', async () => {
    const { key: k } = await key({ origins: [APP] })
    const { key: ipKey } = await key({ ips: ['10.0.0.0/8'] })
    const { key: ipOk } = await key({ ips: ['127.0.0.0/8', '::1'] })
    for (let attempt = 0; attempt < 5; attempt++) {
      await postRpc(rpcUrl, k, call('eth_chainId'), { origin: APP })
      await postRpc(rpcUrl, ipOk, call('eth_chainId'))
      await postRpc(rpcUrl, ipKey, call('eth_chainId'))
      const before = await lanes()
      const refused = await postRpc(rpcUrl, k, call('eth_chainId'), { origin: 'https://evil.example' })
      const refusedIp = await postRpc(rpcUrl, ipKey, call('eth_chainId'))
      expect(refused.status).toBe(403)
      expect(err(refused).message).toContain('allowed_origins')
      expect(refusedIp.status).toBe(403)
      expect(err(refusedIp).message).toContain('the client address 127.0.0.1 is not on')
      expect(await lanes()).toBe(before)
      const ok = await postRpc(rpcUrl, k, call('eth_chainId'), { origin: APP })
      const okIp = await postRpc(rpcUrl, ipOk, call('eth_chainId'))
      expect([ok.status, okIp.status]).toEqual([200, 200])
      expect(ok.headers.get('access-control-allow-origin')).toBe(APP)
      expect(ok.headers.get('access-control-expose-headers')).toContain('X-RateLimit-Remaining')
      // Both went through the lane (unless the auth cache's second passed in between: again).
      if ((await lanes()) === before + 2) return
    }
    throw new Error('the fast lane never took the allowed requests')
  })

  it('method list: a single call is 403, a batch item a -32003 naming the list, through the lane too', async () => {
    const { key: k } = await key({ methods: ['eth_chainId'] })
    const single = await postRpc(rpcUrl, k, call('eth_blockNumber'))
    expect(single.status).toBe(403)
    expect(err(single).message).toBe(
      "the method eth_blockNumber is not on this API key's allowed methods list (allowed_methods)",
    )
    const again = await postRpc(rpcUrl, k, call('eth_blockNumber'))
    expect(again.status).toBe(403)
    const batch = await postRpc(rpcUrl, k, [call('eth_chainId', [], 1), call('eth_blockNumber', [], 2)])
    expect(batch.status).toBe(200)
    expect(items(batch)[0]?.result).toBeDefined()
    expect(items(batch)[1]?.error).toEqual({
      code: -32003,
      message: "the method eth_blockNumber is not on this API key's allowed methods list (allowed_methods)",
    })
  })

  it('contract list: eth_call, eth_getLogs (address filter required) and raw transactions', async () => {
    const { key: k } = await key({ contracts: [A] })
    const allowed = await postRpc(rpcUrl, k, call('eth_call', [{ to: A, data: '0x' }, 'latest']))
    expect(allowed.status).toBe(200)
    expect(err(allowed)).toBeUndefined()
    const elsewhere = await postRpc(rpcUrl, k, call('eth_call', [{ to: B, data: '0x' }, 'latest']))
    expect(elsewhere.status).toBe(403)
    expect(err(elsewhere).message).toContain(`the contract ${B} is not on`)
    const logs = await postRpc(rpcUrl, k, [
      call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }], 1),
      call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0', address: A }], 2),
      call('eth_sendRawTransaction', ['0x02'], 3),
    ])
    expect(items(logs)[0]?.error.message).toContain('needs an address filter')
    expect(items(logs)[1]?.result).toEqual([])
    expect(items(logs)[2]?.error.code).toBe(-32003)
  })

  it('REST routes, the bundler and the paymaster meet the origin and IP lists', async () => {
    const { key: k } = await key({ origins: [APP] })
    const { key: ipKey } = await key({ ips: ['192.0.2.0/24'] })
    for (const [url, method] of [
      [`${h.baseUrl}/usage`, 'GET'],
      [`${h.baseUrl}/webhooks`, 'GET'],
      [`${h.baseUrl}/bundler/ethereum/devnet`, 'POST'],
      [`${h.baseUrl}/paymaster/ethereum/devnet`, 'POST'],
    ] as const) {
      const body = method === 'POST' ? JSON.stringify(call('eth_chainId')) : undefined
      const headers = { 'x-api-key': k, 'content-type': 'application/json', origin: 'https://evil.example' }
      const r = await fetch(url, { method, headers, ...(body ? { body } : {}) })
      expect(r.status, url).toBe(403)
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain('allowed_origins')
      expect(r.headers.get('access-control-allow-origin')).toBe('https://evil.example')
      const ip = await fetch(url, {
        method,
        headers: { ...headers, 'x-api-key': ipKey },
        ...(body ? { body } : {}),
      })
      expect(ip.status, url).toBe(403)
    }
    const ok = await fetch(`${h.baseUrl}/usage`, { headers: { 'x-api-key': k, origin: APP } })
    expect(ok.status).toBe(200)
  })

  it('the Alchemy-compatible root: origin list on the request, method list per call', async () => {
    const { key: k } = await key({ origins: [APP], methods: ['eth_chainId'] })
    const url = `${h.baseUrl}/alchemy/ethereum-devnet/v2/${k}`
    const refused = await postRpc(url, undefined, call('eth_chainId'), { origin: 'https://evil.example' })
    expect(refused.status).toBe(403)
    expect(err(refused).message).toContain('allowed_origins')
    const method = await postRpc(url, undefined, call('eth_blockNumber'), { origin: APP })
    expect(method.status).toBe(403)
    expect(err(method).message).toContain('allowed_methods')
    expect((await postRpc(url, undefined, call('eth_chainId'), { origin: APP })).status).toBe(200)
  })

  it('WebSocket: the upgrade checks origin and IP; messages check methods and contracts', async () => {
    const { key: k } = await key({
      origins: [APP],
      methods: ['eth_chainId', 'eth_subscribe'],
      contracts: [A],
    })
    const { key: ipKey } = await key({ ips: ['10.0.0.0/8'] })
    const noOrigin = await refusedUpgrade(`${wsUrl}?apiKey=${k}`)
    expect(noOrigin.status).toBe(403)
    expect(JSON.stringify(noOrigin.body)).toContain('allowed_origins')
    const other = await refusedUpgrade(`${wsUrl}?apiKey=${k}`, { origin: 'https://evil.example' })
    expect(other.status).toBe(403)
    expect((await refusedUpgrade(`${wsUrl}?apiKey=${ipKey}`)).status).toBe(403)
    const ws = await RawClient.open(`${wsUrl}?apiKey=${k}`, { origin: APP })
    try {
      expect((await ws.call('eth_chainId')).result).toBe(`0x${anvil.chainId.toString(16)}`)
      const refused = await ws.call('eth_blockNumber')
      expect(refused.error).toEqual({
        code: -32003,
        message: "the method eth_blockNumber is not on this API key's allowed methods list (allowed_methods)",
      })
      const logs = await ws.call('eth_subscribe', ['logs', { address: B }])
      expect((logs.error as { message: string }).message).toContain(`the contract ${B} is not on`)
      expect(typeof (await ws.call('eth_subscribe', ['logs', { address: A }])).result).toBe('string')
    } finally {
      await ws.close()
    }
  })

  it('admin API: PATCH /admin/keys/:id sets and clears lists, takes effect at once, and names a bad entry', async () => {
    const { key: k, id, email } = await key({})
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${h.halyard.origin}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      })
    const bad = await admin('PATCH', `/admin/keys/${id}`, { allowed_ips: ['10.0.0.0/8', '10.0.0.0/99'] })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe(
      'allowed_ips: entry "10.0.0.0/99" is not an IPv4/IPv6 address or CIDR range (203.0.113.7, 10.0.0.0/8, 2001:db8::/32)',
    )
    const unknown = await admin('PATCH', `/admin/keys/${id}`, { allowed_methods: ['eth_chainId', 'nope'] })
    expect(unknown.status).toBe(400)
    expect(await unknown.text()).toContain('allowed_methods: entry \\"nope\\"')
    expect((await admin('PATCH', '/admin/keys/key_nope', { allowed_ips: [] })).status).toBe(404)
    expect((await postRpc(rpcUrl, k, call('eth_chainId'))).status).toBe(200)
    const set = await admin('PATCH', `/admin/keys/${id}`, {
      allowed_origins: [APP],
      allowed_ips: ['127.0.0.1'],
    })
    expect(set.status).toBe(200)
    expect(await set.json()).toMatchObject({ allowed_origins: [APP], allowed_ips: ['127.0.0.1'] })
    expect((await postRpc(rpcUrl, k, call('eth_chainId'))).status).toBe(403)
    expect((await postRpc(rpcUrl, k, call('eth_chainId'), { origin: APP })).status).toBe(200)
    const cleared = await admin('PATCH', `/admin/keys/${id}`, { allowed_origins: null })
    expect(await cleared.json()).toMatchObject({ allowed_origins: [], allowed_ips: ['127.0.0.1'] })
    expect((await postRpc(rpcUrl, k, call('eth_chainId'))).status).toBe(200)
    const created = await admin('POST', '/admin/keys', {
      account: email,
      env: 'live',
      allowed_contracts: ['0x1234'],
    })
    expect(created.status).toBe(400)
  })

  it('CORS: preflights answered on every API surface; errors readable; the dashboard stays same-origin', async () => {
    for (const path of [
      '/v1/rpc/ethereum/devnet',
      '/v1/tokens/ethereum-devnet/balances/0x0000000000000000000000000000000000000001',
      '/v1/bundler/ethereum/devnet',
      '/v1/paymaster/ethereum/devnet',
      '/v1/alchemy/eth-mainnet/v2/hk_live_x',
      '/v1/alchemy/ethereum-devnet/nft/v3/hk_live_x/getNFTsForOwner',
    ]) {
      const r = await fetch(`${h.halyard.origin}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: APP,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-api-key',
        },
      })
      expect(r.status, path).toBe(204)
      expect(r.headers.get('access-control-allow-origin')).toBe(APP)
      expect(r.headers.get('vary')).toBe('Origin')
      expect(r.headers.get('access-control-allow-methods')).toContain('POST')
      expect(r.headers.get('access-control-allow-headers')).toBe(
        'Content-Type, X-API-Key, Authorization, X-Request-Id',
      )
      expect(Number(r.headers.get('access-control-max-age'))).toBeGreaterThan(0)
      expect(r.headers.get('access-control-allow-credentials')).toBeNull()
    }
    const unauthorized = await postRpc(rpcUrl, undefined, call('eth_chainId'), { origin: APP })
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(APP)
    expect(unauthorized.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
    expect(unauthorized.headers.get('access-control-allow-credentials')).toBeNull()
    const dashboard = await fetch(`${h.halyard.origin}/dashboard/sign-in`, { headers: { origin: APP } })
    expect(dashboard.headers.get('access-control-allow-origin')).toBeNull()
    const dashPreflight = await fetch(`${h.halyard.origin}/dashboard/sign-in`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'POST' },
    })
    expect(dashPreflight.headers.get('access-control-allow-origin')).toBeNull()
  })
})
