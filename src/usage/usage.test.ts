import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawClient } from '../../test/fixtures/ws/test-client.ts'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeNeeding, serviceUrl } from '../../test/helpers/services.ts'
import { openTestPGlite, POSTGRES_ONLY } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { createLogger } from '../logger.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { UsageRecorder } from './recorder.ts'
import { readUsage, utcDay } from './service.ts'

type Counts = { requests: number; computeUnits: number; limited: number }
type UsageJson = {
  account: { id: string; email: string }
  plan: { name: string; requestsPerSecond: number | null }
  from: string
  to: string
  days: (Counts & { date: string })[]
  methodsDate: string
  methods: (Counts & { method: string })[]
}

async function getUsage(h: TestHalyard, key: string, query = '') {
  const res = await fetch(`${h.baseUrl}/usage${query}`, { headers: { 'x-api-key': key } })
  return { status: res.status, json: (await res.json()) as UsageJson & { error: { message: string } } }
}

/**
 * Per-method counts summed over the UTC days a test's requests may have fallen on (the test
 * may run across midnight): `days` are the days seen before and after the requests.
 */
async function methodsOver(h: TestHalyard, key: string, days: Set<string>) {
  const out = new Map<string, Counts>()
  for (const d of days) {
    const { json } = await getUsage(h, key, `?from=${d}&to=${d}`)
    for (const m of json.methods) {
      const c = out.get(m.method) ?? { requests: 0, computeUnits: 0, limited: 0 }
      out.set(m.method, {
        requests: c.requests + m.requests,
        computeUnits: c.computeUnits + m.computeUnits,
        limited: c.limited + m.limited,
      })
    }
  }
  return out
}

const sumDays = (r: UsageJson) =>
  r.days.reduce((a, d) => ({ requests: a.requests + d.requests, limited: a.limited + d.limited }), {
    requests: 0,
    limited: 0,
  })

/** A batch costing 220 CU: never fits the free plan's 200 CU/s, so always a 429 (no timing). */
const overCuBatch = Array.from({ length: 11 }, (_, i) =>
  call('eth_getStorageAt', ['0x0000000000000000000000000000000000000001', '0x0', '0x0'], i),
)

let anvil: AnvilProcess
beforeAll(async () => {
  anvil = await startAnvil()
})
afterAll(async () => {
  await anvil?.stop()
})

describe('usage through a real Halyard (PGlite)', () => {
  let storage: Storage
  let h: TestHalyard
  let rpc: string
  beforeAll(async () => {
    storage = await openTestPGlite()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    rpc = `${h.baseUrl}/rpc/ethereum/devnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
  })

  it('counts requests, compute units and 429s per method, and serves them after a flush', async () => {
    const key = await h.createKey({ plan: 'free' })
    const days = new Set([utcDay(Date.now())])
    for (let i = 0; i < 3; i++) expect((await postRpc(rpc, key, call('eth_chainId'))).status).toBe(200)
    expect((await postRpc(rpc, key, call('eth_blockNumber'))).status).toBe(200)
    expect(
      (await postRpc(rpc, key, [call('eth_chainId', [], 1), call('eth_blockNumber', [], 2)])).status,
    ).toBe(200)
    expect((await postRpc(rpc, key, overCuBatch)).status).toBe(429)
    days.add(utcDay(Date.now()))

    // Nothing is written per request: the rows appear when the recorder flushes.
    await h.halyard.services.usage.flush()
    const methods = await methodsOver(h, key, days)
    expect(methods.get('eth_chainId')).toEqual({ requests: 3, computeUnits: 3, limited: 0 })
    expect(methods.get('eth_blockNumber')).toEqual({ requests: 1, computeUnits: 1, limited: 0 })
    // A batch is one request (as the limiter counts it) with its calls' summed compute units;
    // the refused one is one limited request and costs nothing.
    expect(methods.get('batch')).toEqual({ requests: 1, computeUnits: 2, limited: 1 })

    const { status, json } = await getUsage(h, key)
    expect(status).toBe(200)
    expect(json.plan).toMatchObject({ name: 'free', requestsPerSecond: 10 })
    expect(json.account.email).toMatch(/@test\.local$/)
    // Default: the last 30 days, today last, every day present.
    expect(json.days).toHaveLength(30)
    expect(json.to).toBe(utcDay(Date.now()))
    expect(json.methodsDate).toBe(json.to)
    expect(sumDays(json)).toEqual({ requests: 5, limited: 1 })
  })

  it('names REST routes by method and path, and counts its own reads', async () => {
    const key = await h.createKey({ plan: 'free' })
    await getUsage(h, key)
    await h.halyard.services.usage.flush()
    const { json } = await getUsage(h, key)
    expect(json.methods.find((m) => m.method === 'GET /v1/usage')?.requests).toBeGreaterThanOrEqual(1)
  })

  it('counts WebSocket messages and connections', async () => {
    const key = await h.createKey({ plan: 'free' })
    const ws = await RawClient.open(`${h.halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`)
    try {
      expect((await ws.call('eth_chainId')).result).toBe('0x7a69')
    } finally {
      await ws.close()
    }
    await h.halyard.services.usage.flush()
    const { json } = await getUsage(h, key)
    const names = json.methods.map((m) => m.method)
    expect(names).toContain('ws eth_chainId')
    expect(names).toContain('ws connect')
  })

  it('keeps usage apart per account', async () => {
    const a = await h.createKey({ plan: 'free' })
    const b = await h.createKey({ plan: 'free' })
    await postRpc(rpc, a, call('eth_chainId'))
    await h.halyard.services.usage.flush()
    const { json } = await getUsage(h, b)
    expect(json.methods.find((m) => m.method === 'eth_chainId')).toBeUndefined()
  })

  it('answers bad ranges with a 400 naming the field', async () => {
    const key = await h.createKey({ plan: 'free' })
    const cases: [string, RegExp][] = [
      ['?from=yesterday', /^from: must be a date as YYYY-MM-DD/],
      ['?to=2026-02-30', /^to: is not a calendar day/],
      ['?from=2026-03-02&to=2026-03-01', /^from: must not be after to/],
      ['?from=2025-01-01&to=2025-06-01', /^from: the range may span at most 90 days/],
      ['?from=2026-01-01&from=2026-01-02', /^from: must be a date/],
      [`?to=${'9'.repeat(5000)}`, /^to: must be a date/],
    ]
    for (const [query, message] of cases) {
      const { status, json } = await getUsage(h, key, query)
      expect(status, query).toBe(400)
      expect(json.error.message, query).toMatch(message)
    }
    const ninety = await getUsage(h, key, '?from=2025-01-01&to=2025-03-31')
    expect(ninety.status).toBe(200)
    expect(ninety.json.days).toHaveLength(90)
    expect(ninety.json.days.every((d) => d.requests === 0)).toBe(true)
  })

  it('wants a key', async () => {
    const res = await fetch(`${h.baseUrl}/usage`)
    expect(res.status).toBe(401)
  })

  it('flushes on shutdown', async () => {
    const other = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    const key = await other.createKey({ plan: 'free' })
    await postRpc(`${other.baseUrl}/rpc/ethereum/devnet`, key, call('eth_chainId'))
    const caller = await other.halyard.ctx.auth.authenticate(key)
    await other.close()
    const report = await readUsage(storage, caller.accountId, {
      from: utcDay(Date.now() - 86_400_000),
      to: utcDay(Date.now()),
    })
    expect(report.days.reduce((n, d) => n + d.requests, 0)).toBe(1)
  })
})

describe('the recorder', () => {
  // One PGlite for both tests, migrated by the first (it starts without the table).
  let storage: Storage
  beforeAll(async () => {
    storage = await openStorage({})
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('keeps what a failed flush could not write, and writes it next time', async () => {
    // No migrations yet: the table does not exist and the flush fails.
    const recorder = new UsageRecorder(storage.db, createLogger('silent'))
    recorder.record('acc_1', 'eth_call', 1, 26, false)
    recorder.record('acc_1', 'eth_call', 1, 26, true)
    await recorder.flush()
    await migrate(storage.db)
    recorder.record('acc_1', 'eth_call', 1, 26, false)
    await recorder.flush()
    const today = utcDay(Date.now())
    const r = await readUsage(storage, 'acc_1', { from: today, to: today })
    expect(r.methods).toEqual([{ method: 'eth_call', requests: 2, computeUnits: 52, limited: 1 }])
  })

  it('counts each request on the UTC day it was made', async () => {
    let now = Date.UTC(2026, 0, 31, 23, 59, 59)
    const recorder = new UsageRecorder(storage.db, createLogger('silent'), () => now)
    recorder.record('acc_2', 'eth_call', 1, 26, false)
    now += 2_000
    // The day moves at midnight (a timer in production) or at the latest with the next flush.
    await recorder.flush()
    recorder.record('acc_2', 'eth_call', 1, 26, false)
    recorder.record('acc_2', 'eth_call', 1, 26, false)
    // A CU-only charge (WebSocket pushes) refused counts nothing.
    recorder.record('acc_2', 'ws push', 0, 40, true)
    await recorder.flush()
    const r = await readUsage(storage, 'acc_2', { from: '2026-01-31', to: '2026-02-01' })
    expect(r.days.map((d) => [d.date, d.requests])).toEqual([
      ['2026-01-31', 1],
      ['2026-02-01', 2],
    ])
    expect(r.methods.map((m) => m.method)).toEqual(['eth_call'])
  })
})

describeNeeding(['DATABASE_URL'], 'two Halyard instances on one PostgreSQL', () => {
  it('add their counts into the same rows', async () => {
    const first = await POSTGRES_ONLY[0]!.open()
    // The second instance's own connection pool on the same schema, as another machine would have.
    const second = await openStorage({ databaseUrl: serviceUrl('DATABASE_URL'), schema: first.schema })
    const a = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage: first })
    const b = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage: second })
    try {
      const key = await a.createKey({ plan: 'growth' })
      const days = new Set([utcDay(Date.now())])
      for (let i = 0; i < 4; i++) await postRpc(`${a.baseUrl}/rpc/ethereum/devnet`, key, call('eth_chainId'))
      for (let i = 0; i < 3; i++) await postRpc(`${b.baseUrl}/rpc/ethereum/devnet`, key, call('eth_chainId'))
      days.add(utcDay(Date.now()))
      // Both flush the same row at once: additive upserts, in key order, so neither is lost.
      await Promise.all([a.halyard.services.usage.flush(), b.halyard.services.usage.flush()])
      const fromA = await methodsOver(a, key, days)
      const fromB = await methodsOver(b, key, days)
      expect(fromA.get('eth_chainId')).toEqual({ requests: 7, computeUnits: 7, limited: 0 })
      expect(fromB.get('eth_chainId')).toEqual(fromA.get('eth_chainId'))
    } finally {
      await a.close()
      await b.close()
      await second.close()
      await first.close()
    }
  })
})
