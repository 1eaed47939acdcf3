import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, expect, it } from 'vitest'
import { describeNeeding, serviceUrl } from '../../test/helpers/services.ts'
import { leaseWanted, MIN_LEASE } from './lease.ts'
import { DAY_MS, type LimitCost, type LimitDecision } from './limiter.ts'
import { MemoryRateLimiter } from './memory-limiter.ts'
import { PLANS, type PlanLimits } from './plans.ts'
import { RedisRateLimiter } from './redis-limiter.ts'

// A fixed clock in the middle of a UTC day keeps the windows deterministic.
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) + 250
const view = (d: LimitDecision) => [d.allowed, d.exceeded ?? null, d.remaining, d.resetAt, d.limit]

/** A small deterministic generator: the same sequence of costs on every run. */
function costs(n: number, seed = 7): LimitCost[] {
  let x = seed
  const next = () => {
    x = (x * 1103515245 + 12345) % 2 ** 31
    return x / 2 ** 31
  }
  return Array.from({ length: n }, () => ({
    requests: next() < 0.1 ? 0 : 1,
    computeUnits: 1 + Math.floor(next() * 60),
  }))
}

it('leases only limits large enough to share, and nothing of an unlimited plan', () => {
  expect(leaseWanted(PLANS.free)).toBeUndefined()
  expect(leaseWanted(PLANS.enterprise)).toBeUndefined()
  expect(leaseWanted(PLANS.growth)).toEqual({ requests: 10, computeUnits: 200 })
  const cuOnly = { requestsPerSecond: null, requestsPerDay: null, computeUnitsPerSecond: 1000 }
  expect(leaseWanted(cuOnly)).toEqual({ requests: -1, computeUnits: 100 })
  const small = { requestsPerSecond: MIN_LEASE * 10 - 1, requestsPerDay: null, computeUnitsPerSecond: null }
  expect(leaseWanted(small)).toBeUndefined()
})

describeNeeding(['REDIS_URL'], 'Redis limiter leases', () => {
  const open: RedisRateLimiter[] = []
  const clients: Redis[] = []
  const make = (prefix: string) => {
    const l = new RedisRateLimiter(serviceUrl('REDIS_URL'), prefix)
    open.push(l)
    return l
  }
  const dayCount = async (prefix: string, acct: string, at: number) => {
    const r = new Redis(serviceUrl('REDIS_URL'))
    clients.push(r)
    return Number((await r.get(`${prefix}:${acct}:d:${Math.floor(at / DAY_MS)}`)) ?? 0)
  }
  const newPrefix = () => `halyard:test:${randomBytes(6).toString('hex')}`
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()))
    for (const c of clients.splice(0)) c.disconnect()
  })

  it('one limiter decides as the in-process one does, mostly without Redis', async () => {
    // Three seconds of mixed costs: the CU budget runs out before the request budget, some
    // calls are CU-only top-ups, and the day limit ends it in the third second.
    const limits: PlanLimits = { requestsPerSecond: 100, requestsPerDay: 150, computeUnitsPerSecond: 2000 }
    const seq = costs(360).map((cost, i) => ({ cost, at: T0 + Math.floor(i / 120) * 1000 + (i % 120) }))
    const prefix = newPrefix()
    const leased = make(prefix)
    const memory = new MemoryRateLimiter()
    let withoutRedis = 0
    let counted = 0
    const refusals = new Set<string>()
    for (const { cost, at } of seq) {
      const quick = leased.tryConsumeSync('acct', limits, cost, at)
      if (quick) withoutRedis++
      const a = quick ?? (await leased.consume('acct', limits, cost, at))
      const b = memory.consumeSync('acct', limits, cost, at)
      expect(view(a)).toEqual(view(b))
      if (a.allowed) counted += cost.requests
      else refusals.add(a.exceeded ?? '')
    }
    expect([...refusals].sort()).toEqual(['compute units per second', 'requests per day'])
    expect(withoutRedis).toBeGreaterThan(seq.length / 3)
    // Stopping gives the unspent lease back: the day counts exactly the calls allowed.
    await leased.close()
    expect(await dayCount(prefix, 'acct', T0)).toBe(counted)
  })

  it('a turn of calls decides in order around the lease, as one at a time would', async () => {
    const limits: PlanLimits = { requestsPerSecond: 60, requestsPerDay: null, computeUnitsPerSecond: 900 }
    const seq = costs(90, 11)
    const together = make(newPrefix())
    const alone = make(newPrefix())
    // The first call of each gets a lease, so the turn below mixes lease and Redis decisions.
    const first = { requests: 1, computeUnits: 1 }
    expect(view(await together.consume('a', limits, first, T0))).toEqual(
      view(await alone.consume('a', limits, first, T0)),
    )
    const turn = await Promise.all(seq.map((cost, i) => together.consume('a', limits, cost, T0 + 1 + i)))
    const oneByOne: LimitDecision[] = []
    for (const [i, cost] of seq.entries()) oneByOne.push(await alone.consume('a', limits, cost, T0 + 1 + i))
    expect(turn.map(view)).toEqual(oneByOne.map(view))
  })

  it('several limiters never admit more than the limit, and at most a lease each fewer', async () => {
    const prefix = newPrefix()
    const limiters = [make(prefix), make(prefix), make(prefix)]
    const limits: PlanLimits = { requestsPerSecond: 200, requestsPerDay: null, computeUnitsPerSecond: null }
    const lease = leaseWanted(limits)?.requests ?? 0
    const one = { requests: 1, computeUnits: 1 }
    const allowed: boolean[] = []
    // Rounds of concurrent calls, so leases granted in one round are spent in the next.
    for (let round = 0; round < 30; round++) {
      const ds = await Promise.all(
        Array.from({ length: 12 }, (_, i) => limiters[i % 3]!.consume('acct', limits, one, T0 + round)),
      )
      allowed.push(...ds.map((d) => d.allowed))
    }
    const admitted = allowed.filter(Boolean).length
    expect(admitted).toBeLessThanOrEqual(200)
    expect(admitted).toBeGreaterThanOrEqual(200 - 2 * lease)
    await Promise.all(limiters.map((l) => l.close()))
    expect(await dayCount(prefix, 'acct', T0)).toBe(admitted)
  })

  it("gives an idle account's unspent lease back to the day count", async () => {
    const prefix = newPrefix()
    const l = make(prefix)
    // Early in a second, so the lease is still held when the day is first read.
    const ms = Date.now() % 1000
    if (ms > 500) await new Promise((r) => setTimeout(r, 1010 - ms))
    const now = Date.now()
    const d = await l.consume('idle', PLANS.growth, { requests: 1, computeUnits: 10 }, now)
    expect(d.allowed).toBe(true)
    // The lease (10 requests) is counted until its second is over and the sweep gives it back.
    expect(await dayCount(prefix, 'idle', now)).toBe(1 + 10)
    let count = 11
    for (let i = 0; i < 50 && count !== 1; i++) {
      await new Promise((r) => setTimeout(r, 100))
      count = await dayCount(prefix, 'idle', now)
    }
    expect(count).toBe(1)
  })
})
