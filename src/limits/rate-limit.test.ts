import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { spawnHalyard } from '../../test/helpers/cli.ts'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeEach, describeNeeding, type ServiceCase } from '../../test/helpers/services.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/** Waits until the start of a wall-clock second, so a burst lands in one one-second window. */
async function startOfSecond(): Promise<void> {
  const ms = Date.now() % 1000
  if (ms > 50) await new Promise((r) => setTimeout(r, 1000 - ms + 5))
}

/**
 * Sends `n` requests one after another inside one second and returns their responses. Tries
 * again when the burst straddled a second boundary (visible as differing X-RateLimit-Reset).
 */
async function burstInOneSecond(n: number, send: () => ReturnType<typeof postRpc>) {
  for (let attempt = 0; attempt < 5; attempt++) {
    await startOfSecond()
    const out = []
    for (let i = 0; i < n; i++) out.push(await send())
    const resets = new Set(out.map((r) => r.headers.get('x-ratelimit-reset')))
    if (resets.size === 1) return out
    await new Promise((r) => setTimeout(r, 1100)) // let the window drain before retrying
  }
  throw new Error('could not fit the burst in one second')
}

const limiterEnvs: (ServiceCase & { env: Record<string, string | undefined> })[] = [
  { name: 'memory', env: { REDIS_URL: undefined } },
  { name: 'redis', needs: ['REDIS_URL'], env: { REDIS_URL: process.env.REDIS_URL } },
]

describeEach(limiterEnvs, 'plan limits over HTTP with the $name limiter', ({ env }) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let url: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage, env })
    url = `${h.baseUrl}/rpc/ethereum/devnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('refuses the 11th free-plan request in a second with 429, Retry-After and the headers', async () => {
    const key = await h.createKey({ plan: 'free' })
    const out = await burstInOneSecond(11, () => postRpc(url, key, call('eth_blockNumber')))
    for (const [i, res] of out.slice(0, 10).entries()) {
      expect(res.status).toBe(200)
      expect(res.headers.get('x-ratelimit-limit')).toBe('10')
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(9 - i))
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 2)
    }
    const refused = out[10]!
    expect(refused.status).toBe(429)
    expect(refused.json).toMatchObject({ error: { code: 'rate_limited' } })
    expect(String((refused.json as unknown as { error: { message: string } }).error.message)).toMatch(
      /10 requests per second/,
    )
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('x-ratelimit-limit')).toBe('10')
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(refused.headers.get('x-ratelimit-reset')).toBe(out[0]!.headers.get('x-ratelimit-reset'))
  })

  it('refuses the 11th cached call the same way (answered at once by the fast lane)', async () => {
    const key = await h.createKey({ plan: 'free' })
    // eth_chainId is cached: the lane answers it without a promise when the limiter allows.
    const out = await burstInOneSecond(11, () => postRpc(url, key, call('eth_chainId')))
    expect(out.slice(0, 10).map((r) => [r.status, r.headers.get('x-ratelimit-remaining')])).toEqual(
      Array.from({ length: 10 }, (_, i) => [200, String(9 - i)]),
    )
    const refused = out[10]!
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(refused.headers.get('x-request-id')).toBeTruthy()
  })

  it('refuses a batch whose compute units exceed the plan, naming compute units', async () => {
    const key = await h.createKey({ plan: 'free' })
    // eth_getStorageAt at a past block costs 20 CU; eleven of them pass the free plan's 200 CU/s.
    const slot = (i: number) =>
      call('eth_getStorageAt', ['0x0000000000000000000000000000000000000001', '0x0', '0x0'], i)
    const refused = await postRpc(
      url,
      key,
      Array.from({ length: 11 }, (_, i) => slot(i)),
    )
    expect(refused.status).toBe(429)
    expect(String((refused.json as unknown as { error: { message: string } }).error.message)).toMatch(
      /220 compute units.*200 compute units per second/,
    )
    const fits = await postRpc(
      url,
      key,
      Array.from({ length: 10 }, (_, i) => slot(i)),
    )
    expect(fits.status).toBe(200)
    expect(fits.json).toHaveLength(10)
  })

  it('puts the headers on 403 answers too', async () => {
    const key = await h.createKey({ plan: 'free', scopes: ['data:read'] })
    const res = await postRpc(url, key, call('eth_chainId'))
    expect(res.status).toBe(403)
    expect(res.headers.get('x-ratelimit-limit')).toBe('10')
  })
})

const dbUrl = process.env.DATABASE_URL
const redisUrl = process.env.REDIS_URL
describeNeeding(['DATABASE_URL', 'REDIS_URL'], 'two Halyard processes on one Redis', () => {
  it('enforce one combined limit', async () => {
    const anvil = await startAnvil()
    const storage = await storageBackends()[1]!.open() // a fresh PostgreSQL schema
    const inProcess = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      env: { REDIS_URL: redisUrl },
    })
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-two-'))
    const config = path.join(dir, 'halyard.yaml')
    writeFileSync(
      config,
      `networks:\n  - chain: ethereum\n    network: devnet\n    chainId: 31337\n    upstreams:\n      - url: ${anvil.url}\n`,
    )
    // The child reads the same schema as the in-process instance (search_path through the URL).
    const searchPath = storage.schema as string
    const child = spawnHalyard(['serve', '--config', config], {
      HALYARD_DATA_DIR: dir,
      DATABASE_URL: `${dbUrl}?options=${encodeURIComponent(`-c search_path=${searchPath}`)}`,
      REDIS_URL: redisUrl,
      HALYARD_SECRET_KEY: 'cd'.repeat(32),
      HALYARD_PUBLIC_URL: 'https://halyard.example.com',
    })
    try {
      const [, childBase] = await child.waitFor(/serving 1 network\(s\) at (\S+)/)
      const key = await inProcess.createKey({ plan: 'free' })
      const urls = [`${inProcess.baseUrl}/rpc/ethereum/devnet`, `${childBase}/rpc/ethereum/devnet`]
      let n = 0
      const out = await burstInOneSecond(14, () => postRpc(urls[n++ % 2]!, key, call('eth_chainId')))
      const statuses = out.map((r) => r.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(10)
      expect(statuses.filter((s) => s === 429)).toHaveLength(4)
      // Each process admitted part of the ten: one shared window, not ten per process.
      expect(out.filter((r, i) => i % 2 === 1 && r.status === 200).length).toBeGreaterThan(0)
      expect(out.filter((r, i) => i % 2 === 0 && r.status === 200).length).toBeGreaterThan(0)
    } finally {
      await child.stop()
      await inProcess.close()
      await storage.close()
      await anvil.stop()
    }
  })
})
