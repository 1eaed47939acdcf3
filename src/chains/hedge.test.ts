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
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/**
 * A relay in front of the real anvil whose replies can be held back, to make one upstream
 * slow on demand (anvil itself cannot be slowed). Health probes are never held back.
 */
function stallableRelay(
  target: string,
): Promise<{ server: Server; url: string; stall: (ms: number) => void }> {
  let stallMs = 0
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString()
    const probe = /"method":"(eth_chainId|eth_blockNumber)"/.test(body)
    if (stallMs > 0 && !probe) await new Promise((r) => setTimeout(r, stallMs))
    const up = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    res.setHeader('content-type', 'application/json')
    res.end(await up.text())
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        server,
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        stall: (ms) => {
          stallMs = ms
        },
      }),
    ),
  )
}

describe('hedged reads', () => {
  let anvil: AnvilProcess
  let relays: Awaited<ReturnType<typeof stallableRelay>>[]
  let storage: Storage
  let h: TestHalyard
  let key: string

  beforeAll(async () => {
    anvil = await startAnvil()
    relays = await Promise.all([stallableRelay(anvil.url), stallableRelay(anvil.url)])
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      storage,
      networks: [
        anvilNetwork(anvil, {
          // The first relay is strongly preferred, so reads go there first and need the hedge.
          upstreams: [
            { url: relays[0]!.url, weight: 1000 },
            { url: relays[1]!.url, weight: 1 },
          ],
          gateway: { healthCheckMs: 100, hedge: true, hedgeMinDelayMs: 50 },
          indexer: { enabled: false },
        }),
      ],
    })
    key = await h.createKey()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    for (const r of relays ?? []) r.server.close()
    await anvil?.stop()
  })

  it('sends a read that is slower than usual to a second upstream too; the first answer wins', async () => {
    const url = `${h.baseUrl}/rpc/ethereum/devnet`
    const read = (i: number) =>
      postRpc(url, key, call('eth_getBalance', [`0x${i.toString(16).padStart(40, '0')}`, 'latest']))
    // Enough ordinary reads for a latency baseline (the method's p95).
    for (let i = 1; i <= 40; i++) expect((await read(i)).json).toMatchObject({ result: '0x0' })
    relays[0]!.stall(3_000)
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => read(100 + i)))
    relays[0]!.stall(0)
    for (const a of answers) expect(a.json).toMatchObject({ result: '0x0' })
    const hedges = await h.halyard.ctx.metrics.hedges.get()
    const won = hedges.values.find((v) => v.labels.outcome === 'won')?.value ?? 0
    // Whichever reads went first to the stalled relay were answered by the other one.
    expect(won).toBeGreaterThan(0)
  })
})
