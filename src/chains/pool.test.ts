import { privateKeyToAccount } from 'viem/accounts'
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
import type { UpstreamStatus } from './upstream-state.ts'

/** Anvil's first well-known dev account (funded on every fresh anvil). */
const ANVIL_KEY_0 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

type Rpc = { result?: unknown; error?: { code: number; message: string } }

/** Three real anvils behind one network: A and B on the right chain, W on chain id 1337. */
describe('upstream pool with real anvil upstreams', () => {
  let a: AnvilProcess
  let b: AnvilProcess
  let w: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let key: string
  let url: string

  const rpc = async (method: string, params: unknown[] = []) =>
    (await postRpc(url, key, call(method, params))).json as unknown as Rpc
  const direct = async (node: AnvilProcess, method: string, params: unknown[] = []) => {
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call(method, params)),
    })
    return ((await res.json()) as Rpc).result
  }
  const statuses = (): UpstreamStatus[] => h.halyard.ctx.networks.get('ethereum', 'devnet').pool.statuses!()
  const status = (i: number) => statuses()[i]!
  const calls = async (upstream: string) => {
    const m = await h.halyard.ctx.metrics.upstreamRequests.get()
    return m.values
      .filter((v) => v.labels.network === 'ethereum-devnet' && v.labels.upstream === upstream)
      .reduce((n, v) => n + v.value, 0)
  }
  async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000) {
    const until = Date.now() + ms
    while (Date.now() < until) {
      if (await cond()) return
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`timed out waiting for: ${what}`)
  }

  beforeAll(async () => {
    ;[a, b, w] = await Promise.all([startAnvil(), startAnvil(), startAnvil({ chainId: 1337 })])
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      storage,
      networks: [
        anvilNetwork(a, {
          requestTimeoutMs: 2_000,
          upstreams: [{ url: a.url }, { url: b.url }, { url: w.url }],
          gateway: { healthCheckMs: 100, breakerCooldownMs: 200 },
        }),
      ],
    })
    key = await h.createKey()
    url = `${h.baseUrl}/rpc/ethereum/devnet`
    await waitFor('A and B verified', () => status(0).healthy && status(1).healthy)
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await Promise.all([a?.stop(), b?.stop(), w?.stop()])
  })

  it('never sends traffic to the upstream on the wrong chain id', async () => {
    for (let i = 0; i < 40; i++)
      expect((await rpc('eth_getBalance', [`0x${'1'.repeat(40)}`, 'latest'])).result).toBe('0x0')
    expect(status(2).chainOk).toBe(false)
    expect(status(2).healthy).toBe(false)
    expect(status(2).lastError).toMatch(/wrong chain \(chain id 1337\)/)
    expect(await calls('upstream-2')).toBe(0)
    expect((await calls('upstream-0')) + (await calls('upstream-1'))).toBeGreaterThanOrEqual(40)
  })

  it('excludes an upstream 20 blocks behind the others and takes it back once level', async () => {
    await direct(a, 'anvil_mine', ['0x14'])
    await waitFor('B excluded as lagging', () => !status(1).healthy && status(1).lag >= 20)
    const headA = Number(await direct(a, 'eth_blockNumber'))
    const before = await calls('upstream-1')
    for (let i = 0; i < 30; i++) expect(Number((await rpc('eth_blockNumber')).result)).toBe(headA)
    expect(await calls('upstream-1')).toBe(before)

    await direct(b, 'anvil_mine', ['0x14'])
    await waitFor('B back in service', () => status(1).healthy && status(1).lag === 0)
    await waitFor('B serves traffic again', async () => {
      await rpc('eth_getBalance', [`0x${'2'.repeat(40)}`, 'latest'])
      return (await calls('upstream-1')) > before
    })
  })

  it('broadcasts a raw transaction to every healthy upstream and reports it accepted', async () => {
    const account = privateKeyToAccount(ANVIL_KEY_0)
    const raw = await account.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      to: `0x${'6'.repeat(40)}`,
      value: 1n,
      nonce: Number(await direct(a, 'eth_getTransactionCount', [account.address, 'latest'])),
      gas: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    })
    await waitFor('A and B both candidates', () => status(0).healthy && status(1).healthy)
    const sent = await rpc('eth_sendRawTransaction', [raw])
    expect(sent.error).toBeUndefined()
    const hash = sent.result as string
    // The answer is the first node's acceptance; the other node's copy may land a moment later.
    const known = async (node: AnvilProcess) =>
      (await direct(node, 'eth_getTransactionByHash', [hash])) !== null
    await waitFor('A knows the transaction', () => known(a), 5_000)
    await waitFor('B knows the transaction', () => known(b), 5_000)
    // Sent again, every node says it knows it already: that error is passed through.
    expect((await rpc('eth_sendRawTransaction', [raw])).error).toBeDefined()
  })

  it('loses no client request when an upstream dies under steady load, and takes it back on restart', async () => {
    const failures: unknown[] = []
    let ok = 0
    let stop = false
    const worker = async (n: number) => {
      while (!stop) {
        const r = await rpc('eth_getBalance', [`0x${n.toString(16).padStart(40, '0')}`, 'latest'])
        if (r.result === '0x0') ok++
        else failures.push(r)
      }
    }
    const workers = Array.from({ length: 16 }, (_, i) => worker(i + 1))
    // Counted in answers, not seconds: a loaded machine answers fewer per second.
    await waitFor('load running', () => ok >= 50 || failures.length > 0)
    const port = a.port
    await a.stop()
    const atStop = ok
    await waitFor('100 answers after A died', () => ok >= atStop + 100 || failures.length > 0, 60_000)
    stop = true
    await Promise.all(workers)
    expect(failures).toEqual([])
    await waitFor('A marked down', () => !status(0).healthy)

    // The node comes back on the same address, fresh, and syncs to the others' head.
    a = await startAnvil({ port })
    await direct(a, 'anvil_mine', [`0x${Number(await direct(b, 'eth_blockNumber')).toString(16)}`])
    await waitFor('A back in service', () => status(0).healthy)
    const before = await calls('upstream-0')
    await waitFor('A serves traffic again', async () => {
      await rpc('eth_getBalance', [`0x${'3'.repeat(40)}`, 'latest'])
      return (await calls('upstream-0')) > before
    })
  })

  it('answers -32603 naming the cause, within the deadline, when every upstream is down', async () => {
    const port = a.port
    await Promise.all([a.stop(), b.stop()])
    // The client gives up well after the 2 s deadline: a hang fails the test instead of passing.
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(call('eth_getBalance', [`0x${'4'.repeat(40)}`, 'latest'])),
      signal: AbortSignal.timeout(6_000),
    })
    const body = (await res.json()) as Rpc
    expect(res.status).toBe(200)
    expect(body.error?.code).toBe(-32603)
    expect(body.error?.message).toMatch(/upstream/)
    a = await startAnvil({ port })
  })
})
