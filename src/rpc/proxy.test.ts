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

describeEachStorage('JSON-RPC proxy on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let url: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    // Indexers off: a test below resets the chain under them.
    const indexer = { enabled: false }
    h = await startTestHalyard({
      networks: [
        anvilNetwork(anvil, { indexer }),
        // The same node, as a network whose config allows the destructive devnet methods.
        anvilNetwork(anvil, { network: 'scratch', indexer, devMethods: { destructive: true } }),
      ],
      storage,
    })
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

  it('devnet writes need rpc:write: a read-only key cannot change code, balances or blocks', async () => {
    const reader = await h.createKey({ scopes: ['rpc:read'] })
    const writer = await h.createKey({ scopes: ['rpc:write'] })
    const target = '0x00000000000000000000000000000000c0de0001'
    const code = '0x6001600055'
    const refused = await postRpc(url, reader, call('anvil_setCode', [target, code]))
    expect(refused.status).toBe(403)
    expect(refused.json).toMatchObject({
      error: {
        code: 'forbidden',
        message: expect.stringMatching(/rpc:write scope required for anvil_setCode/),
      },
    })
    const batch = await postRpc(url, reader, [
      call('anvil_setBalance', [target, '0x1'], 1),
      call('evm_mine', [], 2),
      call('anvil_nodeInfo', [], 3),
    ])
    const items = batch.json as { id: number; result?: unknown; error?: { code: number } }[]
    expect(items[0]?.error?.code).toBe(-32003)
    expect(items[1]?.error?.code).toBe(-32003)
    // Reading the node's configuration stays a read.
    expect(items[2]?.result).toMatchObject({ environment: { chainId: 31337 } })
    const getCode = call('eth_getCode', [target, 'latest'])
    expect((await postRpc(url, reader, getCode)).json.result).toBe('0x')

    const written = await postRpc(url, writer, call('anvil_setCode', [target, code]))
    expect(written.json).toEqual({ jsonrpc: '2.0', id: 1, result: null })
    expect((await postRpc(url, reader, getCode)).json.result).toBe(code)
  })

  it('refuses anvil_reset and its kind unless the network config enables them', async () => {
    const key = await h.createKey()
    const reader = await h.createKey({ scopes: ['rpc:read'] })
    const target = '0x00000000000000000000000000000000c0de0002'
    await postRpc(url, key, call('anvil_setCode', [target, '0x6001']))
    for (const method of [
      'anvil_reset',
      'hardhat_reset',
      'anvil_loadState',
      'anvil_rollback',
      'anvil_reorg',
    ]) {
      const r = await postRpc(url, key, call(method, []))
      expect(r.status, method).toBe(200)
      expect(r.json.error, method).toMatchObject({
        code: -32601,
        message: expect.stringMatching(/not enabled on ethereum\/devnet: .*devMethods\.destructive: true/),
      })
    }
    const getCode = call('eth_getCode', [target, 'latest'])
    expect((await postRpc(url, key, getCode)).json.result).toBe('0x6001')

    const scratch = `${h.baseUrl}/rpc/ethereum/scratch`
    expect((await postRpc(scratch, reader, call('anvil_reset', []))).status).toBe(403)
    expect((await postRpc(scratch, key, call('anvil_reset', []))).json).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: null,
    })
    expect((await postRpc(url, key, getCode)).json.result).toBe('0x')
  })

  it('forwards a result as the node wrote it, byte for byte, through the fast lane and Fastify alike', async () => {
    const key = await h.createKey()
    const [from] = (await postRpc(anvil.url, undefined, call('eth_accounts'))).json.result as string[]
    // A block with transactions and logs-free receipts: a large, nested result with strings.
    let hash = ''
    for (let i = 0; i < 3; i++)
      hash = (
        await postRpc(
          anvil.url,
          undefined,
          call('eth_sendTransaction', [
            { from, to: '0x00000000000000000000000000000000000000aa', value: '0x1' },
          ]),
        )
      ).json.result as string
    await postRpc(anvil.url, undefined, call('anvil_mine', ['0x1']))
    // The block the last transaction went into, from its receipt: with interval mining a block
    // may be mined between the calls above, so "the block before the head" may hold none.
    const receipt = (await postRpc(anvil.url, undefined, call('eth_getTransactionReceipt', [hash]))).json
      .result as { blockNumber: string }
    const body = JSON.stringify(call('eth_getBlockByNumber', [receipt.blockNumber, true], 'raw'))
    const post = async (target: string, headers: Record<string, string>) => {
      const res = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      })
      return res.text()
    }
    const node = await post(anvil.url, {})
    const nodeResult = node.slice(node.indexOf('"result":') + '"result":'.length, node.lastIndexOf('}'))
    expect(JSON.parse(nodeResult).transactions.length).toBeGreaterThan(0)
    // The first request of a key goes through Fastify, the next ones through the fast lane.
    for (const round of [1, 2, 3]) {
      const text = await post(url, { 'x-api-key': key })
      expect(text, `round ${round}`).toBe(`{"jsonrpc":"2.0","id":"raw","result":${nodeResult}}`)
    }
  })
})
