import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { itNeeding } from '../../test/helpers/services.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

type Rpc = { result?: unknown & Record<string, unknown>; error?: { code: number; message: string } }
const hex = (n: number) => `0x${n.toString(16)}`

describeEachStorage('finality-aware cache and coalescing on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let key: string
  let url: string

  const rpc = (method: string, params: unknown[] = []) => postRpc(url, key, call(method, params))
  const direct = async (method: string, params: unknown[] = []) => {
    const res = await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call(method, params)),
    })
    return ((await res.json()) as Rpc).result as unknown
  }
  /** Upstream calls of one method, from the gateway's own metrics (health probes not counted). */
  const upstreamCalls = async (halyard: TestHalyard, method: string) => {
    const m = await halyard.halyard.ctx.metrics.upstreamRequests.get()
    return m.values.filter((v) => v.labels.method === method).reduce((n, v) => n + v.value, 0)
  }
  /** Calls answered to clients, by the gateway's own metrics (cache hits and coalesced ones included). */
  const servedCalls = async (halyard: TestHalyard, method: string) => {
    const m = await halyard.halyard.ctx.metrics.rpcCalls.get()
    return m.values.filter((v) => v.labels.method === method).reduce((n, v) => n + v.value, 0)
  }
  const finalized = (halyard: TestHalyard) =>
    halyard.halyard.ctx.networks.get('ethereum', 'devnet').pool.finalizedHead!() ?? -1
  async function waitFor(cond: () => boolean) {
    for (let i = 0; i < 300 && !cond(); i++) await new Promise((r) => setTimeout(r, 20))
    expect(cond()).toBe(true)
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    h = await startTestHalyard({
      // No indexer: its own eth_getBlockByNumber calls would blur the upstream call counts.
      networks: [anvilNetwork(anvil, { gateway: { healthCheckMs: 100 }, indexer: { enabled: false } })],
      storage,
      // The cache under test is the in-process one; the Redis tier has its own test below.
      env: { REDIS_URL: undefined },
    })
    key = await h.createKey()
    url = `${h.baseUrl}/rpc/ethereum/devnet`
    await direct('anvil_mine', ['0xa'])
    await waitFor(() => finalized(h) >= 8)
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('serves a finalized block from the cache: header says so, no upstream call', async () => {
    const first = await rpc('eth_getBlockByNumber', ['0x3', false])
    expect(first.headers.get('x-cache')).toBe('MISS')
    const calls = await upstreamCalls(h, 'eth_getBlockByNumber')
    const second = await rpc('eth_getBlockByNumber', ['0x3', false])
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(second.json).toEqual(first.json)
    expect((second.json as unknown as Rpc).result?.hash).toBe(
      ((await direct('eth_getBlockByNumber', ['0x3', false])) as { hash: string }).hash,
    )
    expect(await upstreamCalls(h, 'eth_getBlockByNumber')).toBe(calls)
    const hits = await h.halyard.ctx.metrics.cacheLookups.get()
    expect(hits.values.find((v) => v.labels.result === 'hit')?.value).toBeGreaterThanOrEqual(1)
  })

  it('answers `latest` from the node as soon as a block is mined', async () => {
    const before = Number((await rpc('eth_blockNumber')).json.result)
    const blockBefore = (await rpc('eth_getBlockByNumber', ['latest', false])).json as unknown as Rpc
    await direct('evm_mine')
    expect(Number((await rpc('eth_blockNumber')).json.result)).toBe(before + 1)
    const latest = await rpc('eth_getBlockByNumber', ['latest', false])
    expect(latest.headers.get('x-cache')).toBeNull()
    expect(Number((latest.json as unknown as Rpc).result?.number)).toBe(before + 1)
    expect((latest.json as unknown as Rpc).result?.hash).not.toBe(blockBefore.result?.hash)
  })

  it('never serves a block replaced by a reorg', async () => {
    const head = Number(await direct('eth_blockNumber'))
    const old = (await rpc('eth_getBlockByNumber', [hex(head), false])).json as unknown as Rpc
    const oldHash = old.result?.hash as string
    // Ask twice so a cache, were it (wrongly) to hold unfinalized blocks, would hold this one.
    await rpc('eth_getBlockByNumber', [hex(head), false])
    await rpc('eth_getBlockByHash', [oldHash, false])
    await direct('anvil_reorg', [1, []])
    const now = await rpc('eth_getBlockByNumber', [hex(head), false])
    const fresh = (now.json as unknown as Rpc).result?.hash
    expect(fresh).toBe(((await direct('eth_getBlockByNumber', [hex(head), false])) as { hash: string }).hash)
    expect(fresh).not.toBe(oldHash)
    const byOldHash = (await rpc('eth_getBlockByHash', [oldHash, false])).json as unknown as Rpc
    expect(byOldHash.result ?? null).toEqual((await direct('eth_getBlockByHash', [oldHash, false])) ?? null)
  })

  it('turns 100 identical concurrent requests into one upstream call', async () => {
    // Separate HTTP requests for a finalized block: the first fetches, the rest join it or hit.
    await direct('anvil_mine', ['0x3'])
    const target = hex(finalized(h))
    const before = await upstreamCalls(h, 'eth_getBlockByNumber')
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => rpc('eth_getBlockByNumber', [target, true])),
    )
    expect(new Set(answers.map((a) => JSON.stringify(a.json))).size).toBe(1)
    expect(await upstreamCalls(h, 'eth_getBlockByNumber')).toBe(before + 1)

    // An uncacheable read (latest balance) in flight at once: coalesced too.
    const balanceBefore = await upstreamCalls(h, 'eth_getBalance')
    const servedBefore = await servedCalls(h, 'eth_getBalance')
    const batch = Array.from({ length: 100 }, (_, i) => ({
      ...call('eth_getBalance', [`0x${'5'.repeat(40)}`, 'latest']),
      id: i,
    }))
    const res = await postRpc(url, key, batch)
    expect((res.json as unknown as { result?: unknown }[]).every((r) => r.result === '0x0')).toBe(true)
    expect(await upstreamCalls(h, 'eth_getBalance')).toBe(balanceBefore + 1)
    // One upstream call, but every one of the 100 calls answered is counted as served.
    expect(await servedCalls(h, 'eth_getBalance')).toBe(servedBefore + 100)
  })

  itNeeding(['REDIS_URL'], 'shares cached results between instances through Redis', async () => {
    const ns = randomBytes(3).toString('hex')
    const net = anvilNetwork(anvil, {
      network: `devnet${ns}`,
      gateway: { healthCheckMs: 100 },
      indexer: { enabled: false },
    })
    const [one, two] = [
      await startTestHalyard({ networks: [net], storage, env: { REDIS_URL: process.env.REDIS_URL } }),
      await startTestHalyard({ networks: [net], storage, env: { REDIS_URL: process.env.REDIS_URL } }),
    ]
    try {
      const k = await one.createKey()
      const path = `/rpc/ethereum/devnet${ns}`
      const fin = () => one.halyard.ctx.networks.get('ethereum', `devnet${ns}`).pool.finalizedHead!() ?? -1
      const fin2 = () => two.halyard.ctx.networks.get('ethereum', `devnet${ns}`).pool.finalizedHead!() ?? -1
      await waitFor(() => fin() >= 2 && fin2() >= 2)
      const a = await postRpc(`${one.baseUrl}${path}`, k, call('eth_getBlockByNumber', ['0x2', true]))
      expect(a.headers.get('x-cache')).toBe('MISS')
      await new Promise((r) => setTimeout(r, 100))
      const b = await postRpc(`${two.baseUrl}${path}`, k, call('eth_getBlockByNumber', ['0x2', true]))
      expect(b.headers.get('x-cache')).toBe('HIT')
      expect(b.json).toEqual(a.json)
      expect(await upstreamCalls(two, 'eth_getBlockByNumber')).toBe(0)
    } finally {
      await one.close()
      await two.close()
    }
  })
})
