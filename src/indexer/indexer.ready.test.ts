import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'

const CHECK = 'indexer ethereum/devnet'
const MAX_LAG = 5

interface Ready {
  status: number
  body: { status: string; checks: Record<string, string> }
}

/**
 * While a network's indexer cannot advance, `GET /ready` must say so, naming the
 * network and the reason, and turn ready again once it recovers. The indexer's upstream is a
 * proxy in front of anvil that can refuse eth_getLogs — a method only the indexer calls here,
 * so the network's own readiness check (eth_chainId) keeps passing and the failure is the
 * indexer's alone. A second instance on the same database, which does not run the indexer,
 * sees the same network as behind its head by more than `indexer.maxLagBlocks`.
 */
describe.each(storageBackends())('/ready and /metrics while the indexer is stuck, on $name', (backend) => {
  let anvil: AnvilProcess
  let proxy: Server
  let storage: TestStorage
  let runner: TestHalyard
  let standby: TestHalyard
  let dev: Devnet
  let refuseGetLogs = false

  const ready = async (h: TestHalyard): Promise<Ready> => {
    const res = await fetch(`${h.halyard.origin}/ready`)
    return { status: res.status, body: (await res.json()) as Ready['body'] }
  }
  const gauge = async (h: TestHalyard, name: string): Promise<number | undefined> => {
    const text = await (await fetch(`${h.halyard.origin}/metrics`)).text()
    const line = text.split('\n').find((l) => l.startsWith(`${name}{network="ethereum-devnet"}`))
    return line === undefined ? undefined : Number(line.split(' ').at(-1))
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const text = Buffer.concat(chunks).toString()
      const body = JSON.parse(text) as { id: number; method: string }
      res.setHeader('content-type', 'application/json')
      if (refuseGetLogs && body.method === 'eth_getLogs') {
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: body.id,
            error: { code: -32000, message: 'logs unavailable' },
          }),
        )
        return
      }
      const up = await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
      })
      res.end(await up.text())
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    const base = anvilNetwork(anvil, {
      indexer: { enabled: true, maxBlockRange: 2000, maxLagBlocks: MAX_LAG },
    })
    const upstream = { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` }
    const network = {
      ...base,
      upstreams: [{ ...(base.upstreams[0] as (typeof base.upstreams)[number]), ...upstream, ws: undefined }],
    }
    storage = await backend.open()
    runner = await startTestHalyard({ networks: [network], storage })
    standby = await startTestHalyard({ networks: [network], storage, extra: { backgroundJobs: false } })
  })
  afterAll(async () => {
    await standby?.close()
    await runner?.close()
    await storage?.close()
    await new Promise<void>((r) => proxy?.close(() => r()))
    await anvil?.stop()
  })

  it('answers 503 naming the network and the reason while stuck, and 200 again after it recovers', async () => {
    await dev.rpc('anvil_mine', ['0x2'])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await runner.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
    const ok = await ready(runner)
    expect(ok.status).toBe(200)
    expect(ok.body.checks[CHECK]).toBe('ok')
    expect((await ready(standby)).body.checks[CHECK]).toBe('ok')
    // A capability line, not a check: it never fails /ready (indexer.native.test.ts: unavailable).
    for (const h of [runner, standby])
      expect((await ready(h)).body.checks['internal transfers ethereum/devnet']).toMatch(
        /^available \(\w+\)$/,
      )

    // The indexer's next block cannot be read: the follower retries it, step after step.
    refuseGetLogs = true
    await dev.rpc('anvil_mine', ['0x1'])
    const stuck = await until('the indexer to count as stuck', async () => {
      const r = await ready(runner)
      return r.status === 503 ? r : null
    })
    expect(stuck.body.status).toBe('not_ready')
    expect(stuck.body.checks[CHECK]).toMatch(
      new RegExp(
        `^failing: retrying block ${head + 1n} after \\d+ consecutive errors \\(last: .*logs unavailable`,
      ),
    )
    // Only the indexer fails: the network itself still answers.
    expect(stuck.body.checks['network ethereum/devnet']).toBe('ok')
    expect(await gauge(runner, 'halyard_indexer_stuck')).toBe(1)
    expect(await gauge(runner, 'halyard_indexer_consecutive_failures')).toBeGreaterThanOrEqual(3)

    // The instance that does not run the indexer sees it fall behind through the database.
    await dev.rpc('anvil_mine', [`0x${(MAX_LAG + 2).toString(16)}`])
    const behind = await ready(standby)
    expect(behind.status).toBe(503)
    expect(behind.body.checks[CHECK]).toBe(
      `failing: behind the chain head by ${MAX_LAG + 3} blocks (limit ${MAX_LAG}); indexed up to block ${head}`,
    )
    expect(await gauge(standby, 'halyard_indexer_lag_blocks')).toBe(MAX_LAG + 3)

    // The upstream serves logs again: the indexer catches up and both instances are ready.
    refuseGetLogs = false
    const now = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await runner.halyard.services.indexer.waitForBlock('ethereum-devnet', now)
    for (const h of [runner, standby]) {
      const back = await until('ready again', async () => {
        const r = await ready(h)
        return r.status === 200 ? r : null
      })
      expect(back.body.checks[CHECK]).toBe('ok')
      expect(await gauge(h, 'halyard_indexer_stuck')).toBe(0)
      expect(await gauge(h, 'halyard_indexer_lag_blocks')).toBe(0)
    }
  })
})
