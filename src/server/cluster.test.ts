import { mkdtempSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, it } from 'vitest'
import { spawnHalyard } from '../../test/helpers/cli.ts'
import { describeNeeding } from '../../test/helpers/services.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { AuthService } from '../auth/service.ts'
import { AuthStore } from '../auth/store.ts'
import { startAnvil } from '../devnet/anvil.ts'

/** One POST on a connection of its own, so the cluster's round-robin spreads calls over workers. */
function postOnNewConnection(url: string, key: string, body: unknown) {
  return new Promise<{ status: number; worker: string | undefined; reset: string | undefined }>(
    (resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', 'x-api-key': key, connection: 'close' },
        },
        (res) => {
          res.resume()
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              worker: res.headers['x-halyard-worker'] as string | undefined,
              reset: res.headers['x-ratelimit-reset'] as string | undefined,
            }),
          )
        },
      )
      req.on('error', reject)
      req.end(JSON.stringify(body))
    },
  )
}

/** One GET on a connection of its own (so successive scrapes land on different workers). */
function getOnNewConnection(url: string) {
  return new Promise<{ status: number; worker: string | undefined; type: string; body: string }>(
    (resolve, reject) => {
      const req = request(url, { agent: false, headers: { connection: 'close' } }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => {
          body += d
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            worker: res.headers['x-halyard-worker'] as string | undefined,
            type: String(res.headers['content-type']),
            body,
          }),
        )
      })
      req.on('error', reject)
      req.end()
    },
  )
}

/** Sum of a metric's samples whose label set contains `label` (Prometheus text format). */
function sumSamples(text: string, metric: string, label: string): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (line.startsWith(`${metric}{`) && line.includes(label))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

const dbUrl = process.env.DATABASE_URL
const redisUrl = process.env.REDIS_URL
describeNeeding(['DATABASE_URL', 'REDIS_URL'], 'halyard serve with HALYARD_WORKERS=2', () => {
  it('runs the background jobs in one worker, enforces one limit across both, and scrapes both', async () => {
    const anvil = await startAnvil()
    const storage = await storageBackends()[1]!.open() // a fresh PostgreSQL schema
    const auth = new AuthService(new AuthStore(storage.db))
    await auth.createAccount('cluster@halyard.local', 'free')
    const { key } = await auth.createKey({ accountEmail: 'cluster@halyard.local', env: 'test' })
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-cluster-'))
    const config = path.join(dir, 'halyard.yaml')
    writeFileSync(
      config,
      `networks:\n  - chain: ethereum\n    network: devnet\n    chainId: 31337\n    upstreams:\n      - url: ${anvil.url}\n`,
    )
    const child = spawnHalyard(['serve', '--config', config], {
      HALYARD_DATA_DIR: dir,
      HALYARD_WORKERS: '2',
      HALYARD_LOG_LEVEL: 'info',
      DATABASE_URL: `${dbUrl}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
      REDIS_URL: redisUrl,
      HALYARD_SECRET_KEY: 'ef'.repeat(32),
      HALYARD_PUBLIC_URL: 'https://halyard.example.com',
    })
    try {
      const [, base] = await child.waitFor(/serving 1 network\(s\) at (\S+) with 2 workers/)
      const url = `${base}/rpc/ethereum/devnet`
      const body = { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }

      // The free plan allows 10 requests per second; 14 sent inside one window, over both workers.
      let out: Awaited<ReturnType<typeof postOnNewConnection>>[] = []
      let sent = 0 // every RPC call of every attempt, for the metrics check below
      for (let attempt = 0; attempt < 5; attempt++) {
        const ms = Date.now() % 1000
        if (ms > 50) await new Promise((r) => setTimeout(r, 1000 - ms + 5))
        out = []
        for (let i = 0; i < 14; i++) out.push(await postOnNewConnection(url, key, body))
        sent += out.length
        if (new Set(out.map((r) => r.reset)).size === 1) break
        await new Promise((r) => setTimeout(r, 1100))
      }
      expect(new Set(out.map((r) => r.reset)).size).toBe(1)
      expect(out.filter((r) => r.status === 200)).toHaveLength(10)
      expect(out.filter((r) => r.status === 429)).toHaveLength(4)
      // Both workers admitted part of the ten: one shared window, not ten per worker.
      const admittedBy = new Set(out.filter((r) => r.status === 200).map((r) => r.worker))
      expect(admittedBy).toEqual(new Set(['0', '1']))

      // Exactly one worker started the singleton jobs (indexer, mail; webhook delivery runs in all).
      const leaders = child.output().match(/this worker runs the background jobs/g) ?? []
      expect(leaders).toHaveLength(1)

      // GET /metrics answers the whole cluster, whichever worker takes the scrape: the RPC calls
      // above were served by both workers, and every scrape counts all of them.
      const metricsUrl = new URL('/metrics', base).toString()
      const scrapedBy = new Set<string | undefined>()
      for (let i = 0; i < 6; i++) {
        const scrape = await getOnNewConnection(metricsUrl)
        expect(scrape.status).toBe(200)
        expect(scrape.type).toMatch(/^text\/plain; version=0\.0\.4/)
        scrapedBy.add(scrape.worker)
        const rpcCalls = sumSamples(
          scrape.body,
          'halyard_http_requests_total',
          'route="/v1/rpc/:chain/:network"',
        )
        expect(rpcCalls).toBe(sent)
        expect(scrape.body).toMatch(/^halyard_cluster_metrics_workers_missing 0$/m)
        expect(scrape.body).not.toContain('# halyard:')
      }
      expect(scrapedBy).toEqual(new Set(['0', '1']))
    } finally {
      expect(await child.stop()).toBe(0)
      await storage.close()
      await anvil.stop()
    }
  })
})
