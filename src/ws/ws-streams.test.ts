import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AnvilControl,
  DEV_ACCOUNT,
  EMITTER,
  isConsecutive,
  type Json,
  numbers,
  RawClient,
  sleep,
  until,
} from '../../test/fixtures/ws/test-client.ts'
import { TestWsRelay } from '../../test/fixtures/ws/test-relay.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { NetworkStreams } from './network-streams.ts'

const SEND_BUFFER = 64 * 1024

/**
 * The upstream side under stress, against a real anvil behind two of our own loopback relays
 * (test/fixtures/ws/test-relay.ts: they count upstream eth_subscribe calls and can kill connections).
 * Storage plays no part here (only key lookups), so this file runs on PGlite alone.
 */
describe('websocket streams', () => {
  let anvil: AnvilProcess
  let relayA: TestWsRelay
  let relayB: TestWsRelay
  let storage: TestStorage
  let h: TestHalyard
  let chain: AnvilControl
  let url: string
  let streams: NetworkStreams
  const open: RawClient[] = []
  const client = async () => {
    const c = await RawClient.open(url)
    open.push(c)
    return c
  }
  const newHeadsSubscribes = () => relayA.count('newHeads') + relayB.count('newHeads')

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new AnvilControl(anvil.url)
    await chain.installEmitter()
    relayA = await TestWsRelay.start(anvil.wsUrl)
    relayB = await TestWsRelay.start(anvil.wsUrl)
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      storage,
      networks: [
        anvilNetwork(anvil, {
          indexer: { enabled: false },
          upstreams: [
            { url: anvil.url, ws: relayA.url },
            { url: anvil.url, ws: relayB.url },
          ],
        }),
      ],
    })
    h.halyard.services.ws.tune({
      pollIntervalMs: 100,
      pingIntervalMs: 1_500,
      backoffMinMs: 50,
      backoffMaxMs: 400,
      sendBufferBytes: SEND_BUFFER,
    })
    const key = await h.createKey({ env: 'live' })
    url = `${h.halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`
    streams = h.halyard.services.ws.streamsFor(h.halyard.ctx.networks.get('ethereum', 'devnet'))
  })

  afterAll(async () => {
    for (const c of open) c.ws.terminate()
    await h?.close()
    await storage?.close()
    await relayA?.close()
    await relayB?.close()
    await anvil?.stop()
  })

  it('feeds 200 clients from exactly one upstream newHeads subscription', async () => {
    const before = newHeadsSubscribes()
    const connectsBefore = streams.upstreamConnects
    const clients = await Promise.all(Array.from({ length: 200 }, () => client()))
    const subs = await Promise.all(clients.map((c) => c.subscribe('newHeads')))
    expect(new Set(subs).size).toBe(200)
    for (const s of subs) expect(s).toMatch(/^0x[0-9a-f]{32}$/)
    await until('the upstream subscription', () => newHeadsSubscribes() > before)
    await chain.mine()
    await chain.mine()
    const end = await chain.head()
    await until('every client to see the head', () =>
      clients.every((c, i) => numbers(c.pushesOf(subs[i]!)).at(-1) === end),
    )
    expect(newHeadsSubscribes() - before).toBe(1)
    expect(streams.upstreamConnects - connectsBefore).toBeLessThanOrEqual(1)
    const hashes = new Set(clients.map((c, i) => c.pushesOf(subs[i]!).at(-1)!.hash))
    expect(hashes.size).toBe(1)
    // Pushes are charged by size, per account.
    await until('push compute units', () => h.halyard.services.ws.stats.pushComputeUnits > 0)
    const metrics = await (await fetch(`${h.halyard.origin}/metrics`)).text()
    expect(metrics).toContain('halyard_ws_connections{network="ethereum-devnet"} 200')
    expect(metrics).toMatch(/halyard_ws_pushes_total\{network="ethereum-devnet",kind="newHeads"\} [1-9]/)
    await Promise.all(clients.map((c) => c.close()))
    await until('the stream to stop', () => streams.subscriberCount() === 0)
  })

  it('shows every block once, in order, while upstream connections die and fail over', async () => {
    const clients = await Promise.all(Array.from({ length: 3 }, () => client()))
    const subs = await Promise.all(clients.map((c) => c.subscribe('newHeads')))
    await until('the upstream subscription', () => streams.upstreamUrl !== undefined)
    const firstUrl = streams.upstreamUrl
    const other = firstUrl === relayA.url ? relayB : relayA
    const first = firstUrl === relayA.url ? relayA : relayB
    const otherBefore = other.count('newHeads')
    await chain.mine()
    await chain.mine()

    // The connected node hangs silently (no frames, no pongs) and refuses reconnects: only the
    // keep-alive ping can notice, and Halyard must move to the other node.
    first.setAccepting(false)
    first.freeze()
    for (let i = 0; i < 4; i++) {
      await chain.mine()
      await sleep(30)
    }
    // Open is not enough: the relay counts the resubscription only once its frame arrived.
    await until(
      'failover to the other upstream, resubscribed there',
      () => streams.upstreamUrl === other.url && other.count('newHeads') > otherBefore,
    )
    first.dropAll()

    // Both die for a while (heads are polled meanwhile), then one comes back.
    other.setAccepting(false)
    other.dropAll()
    for (let i = 0; i < 5; i++) {
      await chain.mine()
      await sleep(30)
    }
    await chain.mine(3)
    first.setAccepting(true)
    other.setAccepting(true)
    await until('a reconnect', () => streams.upstreamUrl !== undefined)
    // Killed once more right after blocks were mined: the gap is backfilled from parent hashes.
    await chain.mine(4)
    relayA.dropAll()
    relayB.dropAll()
    await chain.mine()
    const end = await chain.head()
    await until('every client to reach the head', () =>
      clients.every((c, i) => numbers(c.pushesOf(subs[i]!)).at(-1) === end),
    )
    for (const [i, c] of clients.entries()) {
      const ns = numbers(c.pushesOf(subs[i]!))
      expect(isConsecutive(ns)).toBe(true)
      expect(ns.length).toBeGreaterThanOrEqual(16)
    }
    // Subscription ids stayed the same throughout: pushes kept arriving under them.
    await Promise.all(clients.map((c) => c.close()))
  })

  it('pushes removed: true for logs undone by anvil_reorg, then the new logs', async () => {
    const c = await client()
    const logsSub = await c.subscribe('logs', { address: EMITTER })
    const headsSub = await c.subscribe('newHeads')
    const otherSub = await c.subscribe('logs', { address: DEV_ACCOUNT })
    await c.subscribe('logs', { topics: [null, `0x${'00'.repeat(32)}`] })
    await chain.emit('0x01')
    await until('the first log', () => c.pushesOf(logsSub).length >= 1)
    const original = c.pushesOf(logsSub)[0]!
    expect(original).toMatchObject({ removed: false, data: '0x01', address: EMITTER })

    await chain.rpc('anvil_reorg', [
      1,
      [[{ from: DEV_ACCOUNT, to: EMITTER, data: '0x02', gas: '0x100000' }, 0]],
    ])
    // One more block, so the reorg is seen even if anvil announced no head for it.
    await chain.mine()
    await until('the removed and the new log', () => c.pushesOf(logsSub).length >= 3)
    const [, removed, replacement] = c.pushesOf(logsSub) as [Json, Json, Json]
    expect(removed).toMatchObject({
      removed: true,
      data: '0x01',
      blockHash: original.blockHash,
      transactionHash: original.transactionHash,
    })
    expect(replacement).toMatchObject({ removed: false, data: '0x02', blockNumber: original.blockNumber })
    expect(replacement.blockHash).not.toBe(original.blockHash)
    expect(c.pushesOf(otherSub)).toEqual([])

    const heads = c.pushesOf(headsSub)
    const ns = numbers(heads)
    const reorgAt = ns.findIndex((n, i) => i > 0 && n <= ns[i - 1]!)
    expect(reorgAt).toBeGreaterThan(0)
    expect(heads[reorgAt]!.hash).toBe(replacement.blockHash)
    await c.close()
  })

  it('closes a client that cannot keep up, with a reason, and never buffers more than the cap', async () => {
    const healthy = await client()
    const healthySub = await healthy.subscribe('newHeads')
    const slow = await client()
    // 200 newHeads subscriptions on one socket: ~100 kB of pushes per block.
    for (let batch = 0; batch < 2; batch++) {
      const calls = Array.from({ length: 100 }, (_, i) => ({
        jsonrpc: '2.0',
        id: `s${batch}-${i}`,
        method: 'eth_subscribe',
        params: ['newHeads'],
      }))
      slow.send(JSON.stringify(calls))
      await until(
        'subscriptions',
        () => slow.frames.filter((f) => typeof f.id === 'string').length >= 100 * (batch + 1),
      )
    }
    slow.ws.pause()
    const stats = h.halyard.services.ws.stats
    const slowBefore = stats.slowClosed
    for (let i = 0; i < 100 && stats.slowClosed === slowBefore; i++) {
      await chain.mine(5)
      await sleep(50)
    }
    expect(stats.slowClosed).toBe(slowBefore + 1)
    slow.ws.resume()
    await until('the close frame', () => slow.closed)
    expect(slow.closed!.code).toBe(1008)
    expect(slow.closed!.reason).toContain('client too slow')
    // The bound: no socket ever had more than the cap waiting in its send buffer.
    expect(stats.maxBuffered).toBeLessThanOrEqual(SEND_BUFFER)

    // The healthy client on the same stream saw every block.
    const end = await chain.head()
    await until(
      'the healthy client to reach the head',
      () => numbers(healthy.pushesOf(healthySub)).at(-1) === end,
    )
    expect(isConsecutive(numbers(healthy.pushesOf(healthySub)))).toBe(true)
    await healthy.close()
  })
})
