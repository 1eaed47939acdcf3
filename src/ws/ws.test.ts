import { WebSocketProvider } from 'ethers'
import { createPublicClient, webSocket } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  AnvilControl,
  EMITTER,
  EMITTER_TOPIC,
  isConsecutive,
  numbers,
  RawClient,
  refusedUpgrade,
  until,
} from '../../test/fixtures/ws/test-client.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'

/**
 * The endpoint as clients see it, against a real anvil: authorisation before the upgrade,
 * limits, bad input, viem and ethers clients, polling without an upstream WebSocket, and the
 * 1001 close on shutdown. Storage is touched only by authentication, so this file runs on every
 * backend; the stream-resilience tests (ws-streams.test.ts) run once.
 */
describeEachStorage('websocket endpoint on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let chain: AnvilControl
  let key: string
  let wsBase: string
  const devnetStreams = () => {
    const net = h.halyard.ctx.networks.get('ethereum', 'devnet')
    return h.halyard.services.ws.streamsFor(net)
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new AnvilControl(anvil.url)
    await chain.installEmitter()
    storage = await backend.open()
    const noIndexer = { indexer: { enabled: false } }
    h = await startTestHalyard({
      storage,
      networks: [
        anvilNetwork(anvil, noIndexer),
        // No upstream WebSocket: heads are polled.
        anvilNetwork(anvil, { ...noIndexer, network: 'polled', upstreams: [{ url: anvil.url }] }),
        anvilNetwork(anvil, { ...noIndexer, network: 'mainnet' }),
      ],
    })
    h.halyard.services.ws.tune({ pollIntervalMs: 100 })
    key = await h.createKey({ env: 'live' })
    wsBase = `${h.halyard.wsOrigin}/v1/ws`
  })

  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('refuses before the upgrade: no key, bad key, wrong scope, test key on mainnet, unknown network', async () => {
    const noKey = await refusedUpgrade(`${wsBase}/ethereum/devnet`)
    expect(noKey.status).toBe(401)
    expect(noKey.body).toMatchObject({ error: { code: 'unauthorized', status: 401 } })

    const badKey = await refusedUpgrade(`${wsBase}/ethereum/devnet?apiKey=halyard_live_${'x'.repeat(32)}`)
    expect(badKey.status).toBe(401)
    expect(badKey.body).toMatchObject({ error: { code: 'unauthorized', status: 401 } })

    const dataOnly = await h.createKey({ env: 'live', scopes: ['data:read'] })
    const scope = await refusedUpgrade(`${wsBase}/ethereum/devnet?apiKey=${dataOnly}`)
    expect(scope.status).toBe(403)
    expect(scope.body).toMatchObject({ error: { code: 'forbidden', status: 403 } })
    expect((scope.body.error as { message: string }).message).toContain('rpc:read')

    const testKey = await h.createKey({ env: 'test' })
    const mainnet = await refusedUpgrade(`${wsBase}/ethereum/mainnet?apiKey=${testKey}`)
    expect(mainnet.status).toBe(403)
    expect(mainnet.body).toMatchObject({ error: { code: 'forbidden', status: 403 } })

    const unknown = await refusedUpgrade(`${wsBase}/ethereum/nowhere?apiKey=${key}`)
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ error: { code: 'not_found', status: 404 } })

    // A key in a header wins over one in the query, as on HTTP: one key-reading order.
    const both = await refusedUpgrade(`${wsBase}/ethereum/devnet?apiKey=${key}`, { 'x-api-key': dataOnly })
    expect(both.status).toBe(403)
    const httpBoth = await fetch(`${h.baseUrl}/rpc/ethereum/devnet?apiKey=${key}`, {
      method: 'POST',
      headers: { 'x-api-key': dataOnly, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }),
    })
    expect(httpBoth.status).toBe(403)

    // A plain GET without the upgrade is told what the path is for.
    const plain = await fetch(`${h.baseUrl}/ws/ethereum/devnet?apiKey=${key}`)
    expect(plain.status).toBe(400)
    expect(await plain.json()).toMatchObject({ error: { code: 'invalid_request' } })

    // The same test key is fine on the devnet, and a live key on mainnet.
    const ok = await RawClient.open(`${wsBase}/ethereum/devnet?apiKey=${testKey}`)
    const ok2 = await RawClient.open(`${wsBase}/ethereum/mainnet?apiKey=${key}`)
    expect((await ok.call('eth_chainId')).result).toBe('0x7a69')
    await Promise.all([ok.close(), ok2.close()])
  })

  it('answers bad input with JSON-RPC errors and serves other calls through the proxy', async () => {
    const c = await RawClient.open(`${wsBase}/ethereum/devnet?apiKey=${key}`)
    c.send('{not json')
    await until('parse error', () => c.frames.find((f) => (f.error as { code?: number })?.code === -32700))
    const badKind = await c.call('eth_subscribe', ['newBlocks'])
    expect(badKind.error).toMatchObject({ code: -32602 })
    expect((badKind.error as { message: string }).message).toContain('params[0]')
    const badFilter = await c.call('eth_subscribe', ['logs', { address: 'xyz' }])
    expect(badFilter.error).toMatchObject({ code: -32602 })
    expect((badFilter.error as { message: string }).message).toContain('params[1]')
    const badTopics = await c.call('eth_subscribe', ['logs', { topics: ['0x12'] }])
    expect(badTopics.error).toMatchObject({ code: -32602 })
    expect((await c.call('eth_unsubscribe', [42])).error).toMatchObject({ code: -32602 })
    expect((await c.call('eth_unsubscribe', ['0x1234'])).result).toBe(false)
    expect((await c.call('no_suchMethod')).error).toMatchObject({ code: -32601 })
    c.send(JSON.stringify({ jsonrpc: '2.0', id: 'x', params: [] }))
    await until('invalid request', () => c.frames.find((f) => f.id === 'x'))
    expect(c.frames.find((f) => f.id === 'x')?.error).toMatchObject({ code: -32600 })
    // Still usable; ordinary calls go to the upstream, batches too.
    expect((await c.call('eth_chainId')).result).toBe('0x7a69')
    c.send(
      JSON.stringify([
        { jsonrpc: '2.0', id: 'b1', method: 'eth_blockNumber' },
        { jsonrpc: '2.0', id: 'b2', method: 'net_version' },
      ]),
    )
    await until('batch reply', () => c.frames.find((f) => f.id === 'b2'))
    expect(c.frames.find((f) => f.id === 'b1')?.result).toMatch(/^0x/)
    await c.close()
  })

  it('bounds connections per account and subscriptions per connection, and rate-limits calls', async () => {
    const email = `ws-free-${backend.name}@test.local`
    await h.halyard.ctx.auth.createAccount(email, 'free')
    // Raise the request limits of this free account so only the WebSocket limits are in play.
    await storage.db
      .updateTable('accounts')
      .set({ limit_rps: 100_000, limit_cups: 1_000_000 })
      .where('email', '=', email)
      .execute()
    const free = (await h.halyard.ctx.auth.createKey({ accountEmail: email, env: 'live' })).key
    const url = `${wsBase}/ethereum/devnet?apiKey=${free}`
    const conns = await Promise.all(Array.from({ length: 10 }, () => RawClient.open(url)))
    const over = await refusedUpgrade(url)
    expect(over.status).toBe(429)
    expect((over.body.error as { message: string }).message).toContain('connection limit: at most 10')

    const c = conns[0]!
    for (let i = 0; i < 25; i++) await c.subscribe('newHeads')
    const refused = await c.call('eth_subscribe', ['newHeads'])
    expect(refused.error).toMatchObject({ code: -32005 })
    expect((refused.error as { message: string }).message).toContain('subscription limit: at most 25')
    expect((await c.call('eth_chainId')).result).toBe('0x7a69')
    await Promise.all(conns.map((x) => x.close()))
    // A closed connection frees its slot.
    const again = await until('a free slot', async () => RawClient.open(url).catch(() => undefined))
    await again.close()

    // An account at its plain free-plan limits: requests beyond 10/s get a JSON-RPC error.
    const limitedEmail = `ws-limited-${backend.name}@test.local`
    await h.halyard.ctx.auth.createAccount(limitedEmail, 'free')
    const limited = (await h.halyard.ctx.auth.createKey({ accountEmail: limitedEmail, env: 'live' })).key
    const lc = await RawClient.open(`${wsBase}/ethereum/devnet?apiKey=${limited}`)
    // 40 calls: even split over three one-second windows, some must be refused.
    const replies = await Promise.all(Array.from({ length: 40 }, () => lc.call('eth_chainId')))
    const limitedReplies = replies.filter((r) => r.error)
    expect(limitedReplies.length).toBeGreaterThan(0)
    expect(limitedReplies[0]!.error).toMatchObject({ code: -32005 })
    expect((limitedReplies[0]!.error as { message: string }).message).toContain('requests per second')
    await until('the window to pass', async () => (await lc.call('eth_chainId')).result === '0x7a69')
    await lc.close()
  })

  it('delivers heads and logs to viem watchBlocks and watchEvent', async () => {
    await until('earlier clients to be gone', () => devnetStreams().subscriberCount() === 0)
    const client = createPublicClient({ transport: webSocket(`${wsBase}/ethereum/devnet?apiKey=${key}`) })
    const blocks: bigint[] = []
    const logs: { address: string; topics: readonly string[]; data: string }[] = []
    const unwatchBlocks = client.watchBlocks({ onBlock: (b) => void blocks.push(b.number) })
    const unwatchLogs = client.watchEvent({ address: EMITTER, onLogs: (l) => void logs.push(...l) })
    try {
      await until('both subscriptions', () => devnetStreams().subscriberCount() >= 2)
      for (let i = 0; i < 3; i++) await chain.mine()
      await chain.emit('0x0102')
      await until('viem blocks', () => blocks.length >= 4)
      await until('viem logs', () => logs.length >= 1)
      // viem fetches each announced block with its own call, so callbacks may come out of order.
      const ns = blocks.map(Number).sort((a, b) => a - b)
      expect(isConsecutive(ns)).toBe(true)
      expect(logs[0]!.address.toLowerCase()).toBe(EMITTER)
      expect(logs[0]!.topics[0]).toBe(EMITTER_TOPIC)
      expect(logs[0]!.data).toBe('0x0102')
    } finally {
      unwatchBlocks()
      unwatchLogs()
      await (await client.transport.getRpcClient()).close()
    }
  })

  it('delivers heads and logs to an ethers WebSocketProvider', async () => {
    await until('earlier clients to be gone', () => devnetStreams().subscriberCount() === 0)
    const provider = new WebSocketProvider(`${wsBase}/ethereum/devnet?apiKey=${key}`)
    const blocks: number[] = []
    const logs: { data: string; topics: readonly string[] }[] = []
    try {
      await provider.on('block', (n: number) => void blocks.push(n))
      await provider.on(
        { address: EMITTER, topics: [EMITTER_TOPIC] },
        (log: { data: string; topics: readonly string[] }) => void logs.push(log),
      )
      await until('ethers subscriptions', () => devnetStreams().subscriberCount() >= 2)
      await chain.mine()
      await chain.emit('0x0a0b')
      await until('ethers blocks', () => blocks.length >= 2)
      await until('ethers logs', () => logs.length >= 1)
      expect(isConsecutive(blocks)).toBe(true)
      expect(logs[0]!.data).toBe('0x0a0b')
    } finally {
      await provider.destroy()
    }
  })

  it('polls heads on a network without an upstream WebSocket', async () => {
    const c = await RawClient.open(`${wsBase}/ethereum/polled?apiKey=${key}`)
    const sub = await c.subscribe('newHeads')
    for (let i = 0; i < 3; i++) await chain.mine()
    const end = await chain.head()
    await until('polled heads', () => numbers(c.pushesOf(sub)).at(-1) === end)
    const ns = numbers(c.pushesOf(sub))
    expect(isConsecutive(ns)).toBe(true)
    const head = c.pushesOf(sub).at(-1)!
    for (const f of ['number', 'hash', 'parentHash', 'timestamp', 'gasUsed', 'gasLimit', 'baseFeePerGas']) {
      expect(head[f]).toMatch(/^0x[0-9a-f]*$/)
    }
    expect(head.transactions).toBeUndefined()
    await c.close()
  })

  it('serves syncing and newPendingTransactions subscriptions', async () => {
    const c = await RawClient.open(`${wsBase}/ethereum/devnet?apiKey=${key}`)
    const syncing = await c.subscribe('syncing')
    await until('syncing status', () => c.pushesOf(syncing).length >= 1)
    expect(c.pushesOf(syncing)[0]).toBe(false)
    const pending = await c.subscribe('newPendingTransactions')
    await until('upstream pending subscription', () => devnetStreams().subscriberCount() >= 2)
    // The upstream subscription is asynchronous; send until one of our transactions shows up.
    const sent: string[] = []
    await until('a pending transaction push', async () => {
      sent.push(await chain.emit('0x01'))
      return c.pushesOf(pending).some((p) => sent.includes(p as unknown as string))
    })
    expect((await c.call('eth_unsubscribe', [pending])).result).toBe(true)
    await c.close()
  })

  it('closes clients with 1001 on shutdown', async () => {
    const c = await RawClient.open(`${wsBase}/ethereum/devnet?apiKey=${key}`)
    await c.subscribe('newHeads')
    await h.close()
    await until('close frame', () => c.closed)
    expect(c.closed).toMatchObject({ code: 1001, reason: 'server shutting down' })
  })
})
