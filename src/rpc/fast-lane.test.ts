import { once } from 'node:events'
import { connect } from 'node:net'
import { isDeepStrictEqual } from 'node:util'
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
import { admit } from './admission.ts'
import { AdmissionMemo } from './admission-memo.ts'
import { DEFAULT_MAX_BATCH } from './envelope.ts'

/** What a client can observe of an answer, request id aside (it is random per request). */
async function observe(h: TestHalyard, key: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await postRpc(`${h.baseUrl}/rpc/ethereum/devnet`, key, body, headers)
  const names = [...r.headers.keys()].filter((n) => !['date', 'connection', 'keep-alive'].includes(n)).sort()
  const values = Object.fromEntries(
    ['content-type', 'x-cache', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining'].map((n) => [
      n,
      r.headers.get(n),
    ]),
  )
  expect(r.headers.get('x-request-id')).toMatch(/^[\w-]{8,}/)
  return { status: r.status, json: r.json, names, values }
}

const lanes = async (h: TestHalyard) =>
  (await h.halyard.ctx.metrics.fastLaneRequests.get()).values[0]?.value ?? 0

/**
 * The answer through the lane: the key is resolved through Fastify first (the lane takes only
 * keys resolved within the auth cache's second), then the request is sent and the lane's count
 * must rise by one. On a machine slow enough for that second to pass in between, again.
 */
async function viaLane(h: TestHalyard, key: string, body: unknown) {
  for (let attempt = 0; attempt < 5; attempt++) {
    await observe(h, key, call('eth_chainId'))
    const before = await lanes(h)
    const answer = await observe(h, key, body)
    if ((await lanes(h)) === before + 1) return answer
  }
  throw new Error('the fast lane never took the request')
}

const slot = (i: number) =>
  call('eth_getStorageAt', ['0x0000000000000000000000000000000000000001', '0x0', '0x0'], i)

/** Requests whose answers the fast lane and Fastify's pipeline must agree on, byte for byte. */
const CASES: { name: string; body: unknown; plan?: 'free'; scopes?: string[] }[] = [
  { name: 'cached single call', body: call('eth_chainId') },
  { name: 'uncached single call', body: call('eth_getBalance', [`0x${'1'.repeat(40)}`, 'latest'], 'a') },
  {
    name: 'batch with a refused item',
    body: [call('eth_chainId', [], 1), call('admin_peers', [], 2), { jsonrpc: '1.0', id: 3, method: 'x' }],
  },
  { name: 'malformed JSON', body: '{"jsonrpc":"2.0",' },
  { name: 'JSON that is not an object', body: '42' },
  { name: 'empty batch', body: [] },
  {
    name: 'batch over the limit',
    body: Array.from({ length: DEFAULT_MAX_BATCH + 1 }, (_, i) => call('eth_chainId', [], i)),
  },
  { name: 'single call with a bad envelope', body: { jsonrpc: '1.0', id: 1, method: 'eth_chainId' } },
  { name: 'unknown method', body: call('eth_noSuchMethod') },
  {
    name: 'prototype poisoning',
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","__proto__":{"a":1}}',
  },
  {
    name: 'prototype poisoning spelt with escapes',
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","\\u005f_proto__":{"a":1}}',
  },
  {
    name: 'constructor poisoning',
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","constructor":{"prototype":{"a":1}}}',
  },
  { name: 'a body of blanks', body: '   ' },
  { name: 'an id with an escaped quote', body: '{"jsonrpc":"2.0","id":"a\\"b","method":"eth_chainId"}' },
  { name: 'a value that names constructor', body: call('eth_getCode', ['constructor'], 'c') },
  { name: 'a body after a byte-order mark', body: `\uFEFF${JSON.stringify(call('eth_chainId'))}` },
  {
    name: 'a write the key may not make',
    body: call('eth_sendRawTransaction', ['0x00']),
    scopes: ['rpc:read'],
  },
  {
    name: 'a batch over the plan (429)',
    body: Array.from({ length: 11 }, (_, i) => slot(i)),
    plan: 'free',
  },
]

/**
 * The fast lane (rpc/fast-lane.ts) answers what the Fastify route answers: the same requests
 * against one Halyard with the lane and one without, each with a key the auth cache knows.
 */
describe('JSON-RPC fast lane', () => {
  let anvil: AnvilProcess
  let storages: Storage[]
  let on: TestHalyard
  let off: TestHalyard

  beforeAll(async () => {
    anvil = await startAnvil()
    storages = await Promise.all([storageBackends()[0]!.open(), storageBackends()[0]!.open()])
    ;[on, off] = await Promise.all([
      startTestHalyard({ networks: [anvilNetwork(anvil)], storage: storages[0]! }),
      startTestHalyard({
        networks: [anvilNetwork(anvil)],
        storage: storages[1]!,
        env: { HALYARD_FAST_LANE: '0' },
      }),
    ])
  })
  afterAll(async () => {
    await Promise.all([on?.close(), off?.close()])
    await Promise.all((storages ?? []).map((s) => s.close()))
    await anvil?.stop()
  })

  for (const c of CASES) {
    it(`answers alike with and without the lane: ${c.name}`, async () => {
      const opts = { ...(c.plan ? { plan: c.plan } : {}), ...(c.scopes ? { scopes: c.scopes } : {}) }
      const pair = async () => {
        const keys = await Promise.all([on.createKey(opts), off.createKey(opts)])
        const a = await viaLane(on, keys[0], c.body)
        await observe(off, keys[1], call('eth_chainId'))
        return [a, await observe(off, keys[1], c.body)] as const
      }
      let [a, b] = await pair()
      // A limited plan counts per second: on a machine slow enough for the second to turn between
      // a key's first call and the one compared, its remaining count differs for that reason
      // alone. Such a pair is sent again with new keys (twice at most); the answers must still
      // be equal in every field.
      for (let again = 0; c.plan && again < 2 && !isDeepStrictEqual(a, b); again++) [a, b] = await pair()
      expect(await lanes(off)).toBe(0)
      expect(a).toEqual(b)
      expect(a.status).toBeLessThan(500)
    })
  }

  it('answers polling calls it remembers as parsing them would, whatever their ids', async () => {
    const keys = await Promise.all([on.createKey(), off.createKey()])
    // Each body after a first of its form is answered from the lane's memory of admissions
    // (rpc/admission-memo.ts); the bodies after those are ones it must not take from memory.
    for (const body of [
      call('eth_chainId', [], 1),
      call('eth_chainId', [], 2),
      call('eth_chainId', [], 'web-3'),
      call('eth_chainId', [], 0),
      call('eth_blockNumber', [], 41),
      call('eth_blockNumber', [], 42),
      call('eth_noSuchMethod', [], 5),
      call('eth_noSuchMethod', [], 6),
      '{"jsonrpc":"2.0","id":9,"method":"eth_chainId","id":9,"params":[]}',
      '{"jsonrpc":"2.0","id":7,"method":"eth_chainId","id":9,"params":[]}',
      '{"jsonrpc":"2.0","id":5,"method":"eth_chainId","\\u0069d":5,"params":[]}',
      '{"jsonrpc":"2.0","id":6,"method":"eth_chainId","\\u0069d":5,"params":[]}',
      '{"jsonrpc":"2.0","id":3,"method":"eth_chainId","params":[1],"params":[]}',
      '{"jsonrpc":"2.0","id":1 ,"method":"eth_chainId","params":[]}',
      '{"jsonrpc":"2.0","id":-1,"method":"eth_chainId","params":[]}',
      '{"jsonrpc":"2.0","id":12345678901234567,"method":"eth_chainId","params":[]}',
      '{"jsonrpc":"2.0","id":"a,b","method":"eth_chainId","params":[]}',
    ]) {
      const a = await viaLane(on, keys[0], body)
      await observe(off, keys[1], call('eth_chainId'))
      expect(a).toEqual(await observe(off, keys[1], body))
    }
  })

  it('refuses a remembered polling call once the key may no longer make it', async () => {
    const key = await on.createKey()
    const { keyId } = await on.halyard.ctx.auth.authenticate(key)
    const poll = (id: number) => viaLane(on, key, call('eth_blockNumber', [], id))
    expect((await poll(1)).json).toHaveProperty('result')
    expect((await poll(2)).json).toHaveProperty('result')
    await on.halyard.ctx.auth.updateKeyAllowlists(keyId, { methods: ['eth_chainId'] })
    const refused = await poll(3)
    expect(refused.status).toBe(403)
  })

  it('remembers a polling call per caller and network, and only where parsing reads its id', async () => {
    const key = await on.createKey()
    const caller = await on.halyard.ctx.auth.authenticate(key)
    const network = on.halyard.ctx.networks.get('ethereum', 'devnet')
    const admitted = (text: string) => {
      const a = admit(JSON.parse(text), { network, caller, maxBatch: DEFAULT_MAX_BATCH })
      if (!a.ok) throw a.error
      return a
    }
    const memo = new AdmissionMemo()
    const first = JSON.stringify(call('eth_chainId', [], 1))
    expect(memo.recall(caller, network, first)).toBeUndefined()
    memo.keep(caller, network, first, JSON.parse(first), admitted(first))
    const next = JSON.stringify(call('eth_chainId', [], 'x-2'))
    const recalled = memo.recall(caller, network, next)
    expect(recalled?.id).toBe('x-2')
    expect(recalled?.admission).toEqual(admitted(next))
    expect(recalled?.body).toEqual(JSON.parse(next))
    // The call's own admission is a copy: the kept one (read by every later call) keeps the first id.
    expect(recalled?.kept).toEqual(admitted(first))
    expect(recalled?.admission.slots[0]?.call?.request).not.toBe(recalled?.kept.slots[0]?.call?.request)
    // The key re-read (a new caller object) starts with nothing remembered.
    expect(memo.recall({ ...caller }, network, next)).toBeUndefined()
    for (const text of [
      '{"jsonrpc":"2.0","id":9,"method":"eth_chainId","id":9,"params":[]}',
      '{"jsonrpc":"2.0","id":5,"method":"eth_chainId","\\u0069d":5,"params":[]}',
      '{"jsonrpc":"2.0","id":4,"method":"eth_chainId","params":[4]}',
      '{"jsonrpc":"2.0","id":-1,"method":"eth_chainId","params":[]}',
      '{"method":"eth_chainId","params":[],"id":1,"jsonrpc":"2.0"}',
    ]) {
      memo.keep(caller, network, text, JSON.parse(text), admitted(text))
      expect(memo.recall(caller, network, text)).toBeUndefined()
    }
  })

  it('neither answers nor counts a request whose client left before its body arrived', async () => {
    const key = await on.createKey()
    await observe(on, key, call('eth_chainId'))
    const served = async () =>
      (await on.halyard.ctx.metrics.httpRequests.get()).values.reduce((sum, v) => sum + v.value, 0)
    const before = { lanes: await lanes(on), served: await served() }
    const { port, pathname } = new URL(on.baseUrl)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    socket.write(
      `POST ${pathname.replace(/\/$/, '')}/rpc/ethereum/devnet HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"jsonrpc":`,
    )
    // The lane took it (its count rises as it takes a request, before the body is read).
    while ((await lanes(on)) === before.lanes) await new Promise((r) => setTimeout(r, 10))
    socket.destroy()
    await once(socket, 'close')
    const after = await observe(on, key, call('eth_chainId'))
    expect(after.status).toBe(200)
    // The one call after it is the only request served since.
    expect(await served()).toBe(before.served + 1)
  })

  it('takes only the exact path of a configured network, leaving every other spelling to Fastify', async () => {
    const key = await on.createKey()
    await observe(on, key, call('eth_chainId'))
    const before = await lanes(on)
    const statuses: Record<string, number> = {}
    for (const path of [
      'ethereum/devnet?x=1',
      'ethereum/dev%6Eet',
      'ethereum/devnet;x=1',
      'ethereum/devnet/',
      'ethereum/devnet/x',
      'Ethereum/devnet',
      'ethereum//devnet',
    ]) {
      const r = await postRpc(`${on.baseUrl}/rpc/${path}`, key, call('eth_chainId'))
      statuses[path] = r.status
      expect(r.status, path).toBeLessThan(500)
    }
    expect(await lanes(on), JSON.stringify(statuses)).toBe(before)
  })

  it('leaves to Fastify what it cannot prove from the headers, with the same answers', async () => {
    const key = await on.createKey()
    await observe(on, key, call('eth_chainId'))
    const before = await lanes(on)
    const text = await observe(on, key, call('eth_chainId'), { 'content-type': 'text/plain' })
    const unknownKey = await observe(on, `${key.slice(0, -4)}zzzz`, call('eth_chainId'))
    expect(await lanes(on)).toBe(before)
    expect(text.status).toBe(200)
    expect(unknownKey.status).toBe(401)
  })
})
