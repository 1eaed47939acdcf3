import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, call, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/**
 * A node that writes its results the way some clients do — indented, with escaped non-ASCII —
 * in front of a real anvil: the bytes differ from what parsing and writing the result again
 * would give, so a test can tell a forwarded result from a re-encoded one.
 */
function indentingNode(anvilUrl: string): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      type Answer = { id: unknown; result?: unknown; error?: unknown }
      const answer = (await (
        await fetch(anvilUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      ).json()) as Answer | Answer[]
      const one = (a: Answer) =>
        a.error !== undefined
          ? JSON.stringify(a)
          : `{"jsonrpc":"2.0","id":${JSON.stringify(a.id)},"result":${indented(a.result)}}`
      const text = Array.isArray(answer) ? `[${answer.map(one).join(',')}]` : one(answer)
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(text)
    })
  })
}

const indented = (v: unknown) => JSON.stringify(v, null, 2)?.replaceAll('é', '\\u00e9') ?? 'null'

describe('forwarded results keep the node’s bytes', () => {
  let anvil: AnvilProcess
  let node: http.Server
  let storage: Storage
  let h: TestHalyard
  let url: string
  let key: string

  beforeAll(async () => {
    anvil = await startAnvil()
    // Blocks past finality, so block 0 may be cached.
    await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call('anvil_mine', ['0x5'])),
    })
    node = indentingNode(anvil.url)
    await new Promise<void>((r) => node.listen(0, '127.0.0.1', r))
    const nodeUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}`
    storage = await openTestPGlite()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil, { upstreams: [{ url: nodeUrl }], indexer: { enabled: false } })],
      storage,
    })
    url = `${h.baseUrl}/rpc/ethereum/devnet`
    key = await h.createKey()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await new Promise((r) => node?.close(r))
    await anvil?.stop()
  })

  let lastCache: string | null = null
  const post = async (body: unknown) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    })
    lastCache = res.headers.get('x-cache')
    return res.text()
  }

  it('answers an uncached call with the node’s result text, through Fastify and the fast lane', async () => {
    const block = (await (
      await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(call('eth_getBlockByNumber', ['latest', false])),
      })
    ).json()) as { result: unknown }
    for (const round of [1, 2, 3]) {
      const text = await post(call('eth_getBlockByNumber', ['latest', false], round))
      expect(text, `round ${round}`).toBe(
        `{"jsonrpc":"2.0","id":${round},"result":${indented(block.result)}}`,
      )
    }
  })

  it('keeps the bytes in a batch, and in the cache for the next caller', async () => {
    const text = await post([call('eth_chainId', [], 'a'), call('eth_getBlockByNumber', ['0x0', false], 'b')])
    const items = JSON.parse(text) as { id: string; result: unknown }[]
    expect(text).toContain(`"result":${indented(items[1]?.result)}`)
    // Block 0 is final: the second asker is answered from the cache, still with the node's text.
    const again = await post(call('eth_getBlockByNumber', ['0x0', false], 'c'))
    expect(again).toBe(`{"jsonrpc":"2.0","id":"c","result":${indented(items[1]?.result)}}`)
    expect(lastCache).toBe('HIT')
  })
})
