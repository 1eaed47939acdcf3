import { randomBytes } from 'node:crypto'
import http from 'node:http'
import { Alchemy, AlchemySubscription, Network } from 'alchemy-sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  AnvilControl,
  DEV_ACCOUNT,
  type Json,
  RawClient,
  refusedUpgrade,
  until,
} from '../../test/fixtures/ws/test-client.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'

const ALICE = '0x00000000000000000000000000000000000a11ce'
const BOB = '0x0000000000000000000000000000000000000b0b'
/** anvil's second dev account (unlocked). */
const SECOND = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'

/** The handshake's answer headers for `protocols` offered (a raw upgrade, whatever the echo). */
function handshakeHeaders(url: string, protocols: string): Promise<http.IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-version': '13',
        'sec-websocket-protocol': protocols,
      },
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve(res.headers)
    })
    req.on('response', (res) => reject(new Error(`upgrade refused with ${res.statusCode}`)))
    req.on('error', reject)
  })
}

/**
 * The WebSocket side of the Alchemy-compatible root with the real alchemy-sdk: anvil runs with
 * chain id 1 and is configured as ethereum/mainnet, so the SDK's `Network.ETH_MAINNET` matches
 * what `eth_chainId` answers (its provider refuses a changed network).
 */
describe('alchemy-sdk WebSocket against the compat root', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let chain: AnvilControl
  let key: string
  let httpUrl: string
  let wsUrl: string
  let alchemy: Alchemy
  const open: RawClient[] = []
  /** Every log line of the run, at the most verbose level. */
  const logLines: string[] = []
  const WRONG = `hal_live_${'x'.repeat(24)}`
  const client = async (url = wsUrl) => {
    const c = await RawClient.open(url)
    open.push(c)
    return c
  }
  const send = (from: string, to: string) =>
    chain.rpc('eth_sendTransaction', [{ from, to, value: '0x1' }]) as Promise<string>
  const streams = () => h.halyard.services.ws.streamsFor(h.halyard.ctx.networks.getByAlias('eth-mainnet'))

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1 })
    chain = new AnvilControl(anvil.url)
    storage = await openTestPGlite()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil, { network: 'mainnet', chainId: 1, indexer: { enabled: false } })],
      storage,
      extra: { logger: createLogger('trace', { write: (line: string) => logLines.push(line) }) },
    })
    h.halyard.services.ws.tune({ pollIntervalMs: 100 })
    // Test keys may not use a network named mainnet.
    key = await h.createKey({ env: 'live' })
    httpUrl = `${h.baseUrl}/alchemy/eth-mainnet/v2/${key}`
    wsUrl = httpUrl.replace(/^http/, 'ws')
    alchemy = new Alchemy({ url: httpUrl, network: Network.ETH_MAINNET })
  })

  afterAll(async () => {
    alchemy?.ws.removeAllListeners()
    // Its socket would otherwise reconnect after the server's 1001.
    if (alchemy) await (await alchemy.config.getWebSocketProvider()).destroy()
    for (const c of open) c.ws.terminate()
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('delivers alchemy_minedTransactions to the SDK: the matching transaction, full', async () => {
    const got: Json[] = []
    alchemy.ws.on({ method: AlchemySubscription.MINED_TRANSACTIONS, addresses: [{ to: ALICE }] }, (e) =>
      got.push(e as Json),
    )
    await until('the SDK subscribed', () => streams().subscriberCount() >= 1)
    const other = await send(DEV_ACCOUNT, BOB)
    const mine = await send(DEV_ACCOUNT, ALICE)
    await until('the mined transaction', () => got.length >= 1)
    expect(got).toHaveLength(1)
    const { removed, transaction } = got[0] as { removed: boolean; transaction: Json }
    expect(removed).toBe(false)
    expect(transaction.hash).toBe(mine)
    expect(transaction).toMatchObject({ from: DEV_ACCOUNT, to: ALICE, value: '0x1' })
    expect(transaction.blockNumber).toMatch(/^0x[0-9a-f]+$/)
    expect(got.some((e) => (e.transaction as Json).hash === other)).toBe(false)
    alchemy.ws.removeAllListeners()
    await until('the SDK unsubscribed', () => streams().subscriberCount() === 0)
  })

  it('serves hashesOnly, from-filters and several address pairs over a raw socket', async () => {
    const c = await client()
    const hashes = await c.subscribe('alchemy_minedTransactions', {
      addresses: [{ from: SECOND }, { to: BOB, from: DEV_ACCOUNT }],
      hashesOnly: true,
    })
    const a = await send(SECOND, ALICE)
    const skip = await send(DEV_ACCOUNT, ALICE)
    const b = await send(DEV_ACCOUNT, BOB)
    await until('two pushes', () => c.pushesOf(hashes).length >= 2)
    expect(c.pushesOf(hashes)).toEqual([
      { removed: false, transaction: { hash: a } },
      { removed: false, transaction: { hash: b } },
    ])
    expect(JSON.stringify(c.pushesOf(hashes))).not.toContain(skip)
    await c.close()
  })

  it('pushes removed: true for transactions a reorg undid, only to includeRemoved subscribers', async () => {
    const c = await client()
    const withRemoved = await c.subscribe('alchemy_minedTransactions', {
      addresses: [{ to: ALICE }],
      includeRemoved: true,
    })
    const without = await c.subscribe('alchemy_minedTransactions', { addresses: [{ to: ALICE }] })
    const original = await send(SECOND, ALICE)
    await until('the first push', () => c.pushesOf(withRemoved).length >= 1)
    await chain.rpc('anvil_reorg', [1, [[{ from: SECOND, to: ALICE, value: '0x2' }, 0]]])
    // One more block, so the reorg is seen even if anvil announced no head for it.
    await chain.rpc('evm_mine')
    await until('the removed and the new transaction', () => c.pushesOf(withRemoved).length >= 3)
    const [first, removed, replacement] = c.pushesOf(withRemoved) as [Json, Json, Json]
    const tx = (p: Json) => p.transaction as Json
    expect(first.removed).toBe(false)
    expect(tx(first).hash).toBe(original)
    expect(removed.removed).toBe(true)
    expect(tx(removed)).toEqual(tx(first))
    expect(replacement.removed).toBe(false)
    expect(tx(replacement)).toMatchObject({ to: ALICE, value: '0x2' })
    await until('the replacement, without removals', () => c.pushesOf(without).length >= 2)
    expect(c.pushesOf(without).map((p) => [p.removed, tx(p).hash])).toEqual([
      [false, original],
      [false, tx(replacement).hash],
    ])
    await c.close()
  })

  it('delivers alchemy_pendingTransactions: full transactions, or hashes, filtered by from or to', async () => {
    const c = await client()
    const full = await c.subscribe('alchemy_pendingTransactions', { toAddress: [BOB, ALICE] })
    const hashes = await c.subscribe('alchemy_pendingTransactions', { fromAddress: SECOND, hashesOnly: true })
    const sdk: Json[] = []
    alchemy.ws.on({ method: AlchemySubscription.PENDING_TRANSACTIONS, toAddress: BOB }, (tx) =>
      sdk.push(tx as Json),
    )
    await until('the pending stream', () => streams().subscriberCount() >= 3)
    // The upstream subscription is asynchronous: send until ours show up.
    const toBob: string[] = []
    const fromSecond: string[] = []
    await until('pending pushes', async () => {
      toBob.push(await send(DEV_ACCOUNT, BOB))
      fromSecond.push(await send(SECOND, DEV_ACCOUNT))
      return (
        c.pushesOf(full).some((p) => toBob.includes(p.hash as string)) &&
        c.pushesOf(hashes).some((p) => fromSecond.includes(p as unknown as string)) &&
        sdk.some((p) => toBob.includes(p.hash as string))
      )
    })
    for (const p of c.pushesOf(full)) expect([BOB, ALICE]).toContain(p.to)
    expect(c.pushesOf(full).find((p) => toBob.includes(p.hash as string))).toMatchObject({
      from: DEV_ACCOUNT,
      to: BOB,
    })
    for (const p of c.pushesOf(hashes)) expect(fromSecond).toContain(p)
    for (const p of sdk) expect(p.to).toBe(BOB)
    alchemy.ws.removeAllListeners()
    await c.close()
  })

  it('echoes the alchemy-sdk subprotocol, the first of several, and no other', async () => {
    const ws = new WebSocket(wsUrl, ['alchemy-sdk-3.6.5'])
    await new Promise((r, j) => {
      ws.once('open', r)
      ws.once('error', j)
    })
    expect(ws.protocol).toBe('alchemy-sdk-3.6.5')
    ws.close()
    const several = await handshakeHeaders(httpUrl, 'graphql-ws, alchemy-sdk-9.9.9, alchemy-sdk-3.6.5')
    expect(several['sec-websocket-protocol']).toBe('alchemy-sdk-9.9.9')
    const none = await handshakeHeaders(httpUrl, 'graphql-ws, mqtt')
    expect(none['sec-websocket-protocol']).toBeUndefined()
  })

  it('serves JSON-RPC through the compat registry, and refuses bad subscription params naming the field', async () => {
    const c = await client()
    expect((await c.call('eth_chainId')).result).toBe('0x1')
    // The SDK's heartbeat.
    expect((await c.call('net_version')).result).toBe('1')
    // The root's own alchemy_* rows answer over the socket too.
    const receipts = await c.call('alchemy_getTransactionReceipts', [{ blockNumber: '0x1' }])
    expect((receipts.result as { receipts: Json[] }).receipts[0]).toMatchObject({ blockNumber: '0x1' })
    const unserved = await c.call('alchemy_simulateExecution', [{}])
    expect(unserved.error).toMatchObject({ code: -32601 })
    expect(String((unserved.error as Json).message)).toMatch(/alchemy_simulateExecution.*not served/)
    const bad: [unknown[], RegExp][] = [
      [['alchemy_minedTransactions', { addresses: [{ from: '0x12' }] }], /addresses\[0\]\.from/],
      [['alchemy_minedTransactions', { addresses: [{}] }], /addresses\[0\].*from or to/],
      [['alchemy_minedTransactions', { hashesOnly: 'yes' }], /hashesOnly/],
      [['alchemy_minedTransactions', { addresses: 'x' }], /addresses/],
      [['alchemy_pendingTransactions', { toAddress: 5 }], /toAddress/],
      [['alchemy_pendingTransactions', { fromAddress: [BOB, 'nope'] }], /fromAddress\[1\]/],
      [['alchemy_pendingTransactions', {}, {}], /params\[2\]/],
      [['alchemy_nope'], /unknown subscription kind/],
    ]
    for (const [params, mention] of bad) {
      const reply = await c.call('eth_subscribe', params)
      expect(reply.error, JSON.stringify(params)).toMatchObject({ code: -32602 })
      expect(String((reply.error as Json).message)).toMatch(mention)
    }
    await c.close()
    // Halyard's own endpoint does not serve Alchemy's kinds.
    const own = await client(`${h.halyard.wsOrigin}/v1/ws/ethereum/mainnet?apiKey=${key}`)
    const reply = await own.call('eth_subscribe', ['alchemy_minedTransactions', {}])
    expect(reply.error).toMatchObject({ code: -32602 })
    await own.close()
  })

  it('refuses a wrong key with 401 and the error body, and never repeats a key from the path', async () => {
    const refused = await refusedUpgrade(wsUrl.replace(key, WRONG))
    expect(refused.status).toBe(401)
    expect(refused.body).toMatchObject({ error: { code: 'unauthorized' } })
    expect(JSON.stringify(refused.body)).not.toContain(WRONG)
    const lost = await refusedUpgrade(`${wsUrl}/extra`)
    expect(lost.status).toBe(404)
    expect(JSON.stringify(lost.body)).not.toContain(key)
    expect(JSON.stringify(lost.body)).toContain('[redacted]')
    const nowhere = await refusedUpgrade(wsUrl.replace('eth-mainnet', 'eth-nowhere'))
    expect(nowhere.status).toBe(404)
    expect(JSON.stringify(nowhere.body)).toContain('eth-nowhere')
    // A plain GET is told the URL wants a POST or an upgrade.
    const plain = await fetch(httpUrl)
    expect(plain.status).toBe(400)
    expect(await plain.text()).not.toContain(key)
  })
  it('logs no key, right or wrong, in all of the above', () => {
    expect(logLines.length).toBeGreaterThan(0)
    const leaks = logLines.filter((l) => l.includes(key) || l.includes(WRONG))
    expect(leaks).toEqual([])
  })
})
