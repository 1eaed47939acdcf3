import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

describe.each(storageBackends())('JSON-RPC proxy on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let url: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    url = `${h.baseUrl}/rpc/ethereum/devnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('answers eth_chainId with X-API-Key and with Bearer alike', async () => {
    const key = await h.createKey()
    const a = await postRpc(url, key, call('eth_chainId'))
    expect(a.status).toBe(200)
    expect(a.json).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' })
    const b = await postRpc(url, undefined, call('eth_chainId', [], 'x'), { authorization: `Bearer ${key}` })
    expect(b.json).toEqual({ jsonrpc: '2.0', id: 'x', result: '0x7a69' })
  })

  it('answers a batch whose first item is null per item, not with a 500', async () => {
    const key = await h.createKey()
    const r = await postRpc(url, key, [null, call('eth_chainId', [], 2)])
    expect(r.status).toBe(200)
    const items = r.json as { id: unknown; result?: unknown; error?: { code: number } }[]
    expect(items[0]).toMatchObject({ id: null, error: { code: -32600 } })
    expect(items[1]).toEqual({ jsonrpc: '2.0', id: 2, result: '0x7a69' })
  })
})
