import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

type Rpc = { result?: unknown; error?: { code: number; message: string } }
const hex = (n: number) => `0x${n.toString(16)}`

/** Init code of a contract whose runtime is `LOG1(0, 0, calldata word 0); STOP`: one log per call. */
const EMITTER_INIT = '0x6009600c60003960096000f360003560006000a100'
const DEV = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'
const RANGE_CAP = 8

/**
 * A fake upstream standing in for a provider with an eth_getLogs range cap (anvil has none):
 * it relays everything to the real anvil but rejects getLogs ranges over RANGE_CAP blocks,
 * the way hosted providers do.
 */
function rangeCappedProxy(target: string): Promise<{ server: Server; url: string; rejected: () => number }> {
  let rejected = 0
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString()
    const msg = JSON.parse(body) as {
      id: number
      method: string
      params: [{ fromBlock: string; toBlock: string }]
    }
    if (msg.method === 'eth_getLogs') {
      const f = msg.params[0]
      const span = Number(f.toBlock) - Number(f.fromBlock) + 1
      if (!/^0x/.test(f.fromBlock) || !/^0x/.test(f.toBlock) || span > RANGE_CAP) {
        rejected++
        res.setHeader('content-type', 'application/json')
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            error: { code: -32005, message: `query exceeds max block range ${RANGE_CAP}` },
          }),
        )
        return
      }
    }
    const up = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    res.setHeader('content-type', 'application/json')
    res.end(await up.text())
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        server,
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        rejected: () => rejected,
      }),
    ),
  )
}

describe('eth_getLogs guard', () => {
  let anvil: AnvilProcess
  let proxy: Awaited<ReturnType<typeof rangeCappedProxy>>
  let storage: Storage
  let h: TestHalyard
  let key: string
  let emitter: string

  const direct = async (method: string, params: unknown[] = []) => {
    const res = await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call(method, params)),
    })
    return ((await res.json()) as Rpc).result as never
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    proxy = await rangeCappedProxy(anvil.url)
    const deploy = await direct('eth_sendTransaction', [{ from: DEV, data: EMITTER_INIT }])
    emitter = (
      (await until('the emitter deployment', () => direct('eth_getTransactionReceipt', [deploy]))) as {
        contractAddress: string
      }
    ).contractAddress
    // 40 blocks, one log each (automine), topic = the block's ordinal. anvil answers
    // eth_sendTransaction once the tx is in its pool, before the block is mined: wait for the
    // receipt, or under load the next tx can join the same block.
    for (let i = 1; i <= 40; i++) {
      const hash = await direct('eth_sendTransaction', [
        { from: DEV, to: emitter, data: `0x${i.toString(16).padStart(64, '0')}` },
      ])
      await until(`receipt of emission ${i}`, () => direct('eth_getTransactionReceipt', [hash]))
    }
    storage = await storageBackends()[0]!.open()
    const gateway = { healthCheckMs: 100, getLogsMaxRange: 100, getLogsMaxResults: 30 }
    h = await startTestHalyard({
      storage,
      networks: [
        anvilNetwork(anvil, { gateway, indexer: { enabled: false } }),
        anvilNetwork(anvil, {
          network: 'capped',
          upstreams: [{ url: proxy.url }],
          gateway,
          indexer: { enabled: false },
        }),
      ],
    })
    key = await h.createKey()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    proxy?.server.close()
    await anvil?.stop()
  })

  it('refuses a block range over the limit with an error naming the limit, before any upstream', async () => {
    const res = await postRpc(
      `${h.baseUrl}/rpc/ethereum/devnet`,
      key,
      call('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(150) }]),
    )
    expect(res.status).toBe(200)
    const err = (res.json as unknown as Rpc).error
    expect(err?.code).toBe(-32005)
    expect(err?.message).toMatch(/151 blocks.*getLogsMaxRange.*100/)
  })

  it('refuses a result over the result limit, naming it', async () => {
    const res = await postRpc(
      `${h.baseUrl}/rpc/ethereum/devnet`,
      key,
      call('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest', address: emitter }]),
    )
    const err = (res.json as unknown as Rpc).error
    expect(err?.code).toBe(-32005)
    expect(err?.message).toMatch(/getLogsMaxResults.*30/)
  })

  it('splits a range the upstream rejects and merges the halves: identical to a direct query', async () => {
    const filter = { fromBlock: '0x2', toBlock: hex(25), address: emitter }
    const before = proxy.rejected()
    const res = await postRpc(`${h.baseUrl}/rpc/ethereum/capped`, key, call('eth_getLogs', [filter]))
    const got = (res.json as unknown as Rpc).result as { blockNumber: string; topics: string[] }[]
    const want = (await direct('eth_getLogs', [filter])) as unknown[]
    expect(want.length).toBe(24)
    expect(got).toEqual(want)
    expect(proxy.rejected()).toBeGreaterThan(before)

    // Tags are resolved for the halves: `latest` still reaches the head.
    const tagged = { fromBlock: hex(20), toBlock: 'latest', address: emitter }
    const viaTags = (await postRpc(`${h.baseUrl}/rpc/ethereum/capped`, key, call('eth_getLogs', [tagged])))
      .json as unknown as Rpc
    expect(viaTags.result).toEqual(await direct('eth_getLogs', [tagged]))
  })
})
