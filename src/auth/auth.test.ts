import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

// A signed transaction's bytes never reach anvil: scope checks run before forwarding.
const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000000080c0'

describeEachStorage('authentication and scopes on $name', (backend) => {
  let devnet: AnvilProcess
  let mainnet: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let devUrl: string
  let mainUrl: string

  beforeAll(async () => {
    ;[devnet, mainnet] = await Promise.all([startAnvil(), startAnvil({ chainId: 1 })])
    storage = await backend.open()
    h = await startTestHalyard({
      networks: [anvilNetwork(devnet), anvilNetwork(mainnet, { network: 'mainnet', chainId: 1 })],
      storage,
    })
    devUrl = `${h.baseUrl}/rpc/ethereum/devnet`
    mainUrl = `${h.baseUrl}/rpc/ethereum/mainnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await Promise.all([devnet?.stop(), mainnet?.stop()])
  })

  it('refuses a request without a key with 401 unauthorized', async () => {
    const res = await postRpc(devUrl, undefined, call('eth_chainId'))
    expect(res.status).toBe(401)
    expect(res.json).toMatchObject({ error: { code: 'unauthorized' } })
    expect(String((res.json as unknown as { error: { message: string } }).error.message)).toMatch(/key/i)
    expect(res.headers.get('x-request-id')).toBeTruthy()
  })

  it('refuses an unknown key and a malformed key with 401', async () => {
    const unknown = `halyard_test_${'A'.repeat(32)}`
    for (const key of [unknown, 'not-a-key']) {
      const res = await postRpc(devUrl, key, call('eth_chainId'))
      expect(res.status).toBe(401)
      expect(res.json).toMatchObject({ error: { code: 'unauthorized' } })
    }
    const bearer = await postRpc(devUrl, undefined, call('eth_chainId'), {
      authorization: `Bearer ${unknown}`,
    })
    expect(bearer.status).toBe(401)
  })

  it('refuses a revoked key with 401 within the auth cache window', async () => {
    const key = await h.createKey()
    expect((await postRpc(devUrl, key, call('eth_chainId'))).status).toBe(200)
    const auth = h.halyard.ctx.auth
    const caller = await auth.authenticate(key)
    await auth.revokeKey(caller.keyId)
    // Revocation must be honoured within a second (the cache's lifetime); poll, never time it.
    let status = 0
    for (let i = 0; i < 40 && status !== 401; i++) {
      status = (await postRpc(devUrl, key, call('eth_chainId'))).status
      if (status !== 401) await new Promise((r) => setTimeout(r, 100))
    }
    expect(status).toBe(401)
  })

  it('refuses a key without rpc:read with 403 forbidden naming the scope', async () => {
    const key = await h.createKey({ scopes: ['data:read'] })
    const res = await postRpc(devUrl, key, call('eth_chainId'))
    expect(res.status).toBe(403)
    expect(res.json).toMatchObject({ error: { code: 'forbidden' } })
    expect(JSON.stringify(res.json)).toContain('rpc:read')
  })

  it('refuses eth_sendRawTransaction from an rpc:read-only key with 403', async () => {
    const key = await h.createKey({ scopes: ['rpc:read'] })
    const res = await postRpc(devUrl, key, call('eth_sendRawTransaction', [RAW_TX]))
    expect(res.status).toBe(403)
    expect(JSON.stringify(res.json)).toContain('rpc:write')
    // In a batch the refusal is per item: the other call still succeeds.
    const batch = await postRpc(devUrl, key, [
      call('eth_chainId', [], 1),
      call('eth_sendRawTransaction', [RAW_TX], 2),
    ])
    expect(batch.status).toBe(200)
    const items = batch.json as unknown as { id: number; result?: string; error?: { code: number } }[]
    expect(items.find((i) => i.id === 1)?.result).toBe('0x7a69')
    expect(items.find((i) => i.id === 2)?.error?.code).toBe(-32003)
  })

  it('lets an rpc:write key send a raw transaction through to the node', async () => {
    const key = await h.createKey({ scopes: ['rpc:write'] })
    const res = await postRpc(devUrl, key, call('eth_sendRawTransaction', [RAW_TX]))
    expect(res.status).toBe(200)
    // The node rejects the unsigned bytes; what matters is that it was asked.
    expect(res.json).toHaveProperty('error')
    expect((res.json as unknown as { error: { code: number } }).error.code).not.toBe(-32003)
  })

  it('stores keys only as a SHA-256 hash and a display prefix', async () => {
    const key = await h.createKey()
    const { createHash } = await import('node:crypto')
    const rows = await storage.db.selectFrom('api_keys').selectAll().execute()
    const dump = JSON.stringify(rows)
    expect(dump).not.toContain(key)
    expect(dump).toContain(createHash('sha256').update(key).digest('hex'))
  })

  it('refuses a test key on a mainnet network with 403 and serves a live key', async () => {
    const test = await h.createKey({ env: 'test' })
    const refused = await postRpc(mainUrl, test, call('eth_chainId'))
    expect(refused.status).toBe(403)
    expect(refused.json).toMatchObject({ error: { code: 'forbidden' } })
    expect(JSON.stringify(refused.json)).toMatch(/test key/i)
    const live = await h.createKey({ env: 'live' })
    const ok = await postRpc(mainUrl, live, call('eth_chainId'))
    expect(ok.status).toBe(200)
    expect(ok.json).toEqual({ jsonrpc: '2.0', id: 1, result: '0x1' })
  })
})
