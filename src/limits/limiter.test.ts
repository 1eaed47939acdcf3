import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { RateLimiter } from './limiter.ts'
import { MemoryRateLimiter } from './memory-limiter.ts'
import { PLANS } from './plans.ts'
import { RedisRateLimiter } from './redis-limiter.ts'

interface Impl {
  name: string
  make(): RateLimiter
}

const impls: Impl[] = [{ name: 'memory', make: () => new MemoryRateLimiter() }]
const redisUrl = process.env.REDIS_URL
if (redisUrl) {
  impls.push({
    name: 'redis',
    make: () => new RedisRateLimiter(redisUrl, `halyard:test:${randomBytes(6).toString('hex')}`),
  })
}

// A fixed clock in the middle of a second and of a UTC day keeps the windows deterministic.
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) + 250
const one = { requests: 1, computeUnits: 1 }

describe.each(impls)('rate limiter contract: $name', (impl) => {
  const open: RateLimiter[] = []
  const make = () => {
    const l = impl.make()
    open.push(l)
    return l
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()))
  })

  it('allows the plan rate and refuses the next request in the same second', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) {
      const d = await l.consume('acct', PLANS.free, one, T0 + i)
      expect(d.allowed).toBe(true)
      expect(d.limit).toBe(10)
      expect(d.remaining).toBe(9 - i)
      expect(d.resetAt).toBe(Math.floor(T0 / 1000) + 1)
    }
    const refused = await l.consume('acct', PLANS.free, one, T0 + 20)
    expect(refused.allowed).toBe(false)
    expect(refused.exceeded).toBe('requests per second')
    expect(refused.remaining).toBe(0)
    expect(refused.retryAfterSeconds).toBe(1)
  })

  it('opens a new window in the next second', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) await l.consume('acct', PLANS.free, one, T0)
    expect((await l.consume('acct', PLANS.free, one, T0)).allowed).toBe(false)
    expect((await l.consume('acct', PLANS.free, one, T0 + 1000)).allowed).toBe(true)
  })

  it('keeps accounts apart', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) await l.consume('a', PLANS.free, one, T0)
    expect((await l.consume('a', PLANS.free, one, T0)).allowed).toBe(false)
    expect((await l.consume('b', PLANS.free, one, T0)).allowed).toBe(true)
  })

  it('refuses compute units over the per-second budget and charges nothing for a refusal', async () => {
    const l = make()
    expect((await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 150 }, T0)).allowed).toBe(true)
    const over = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 60 }, T0)
    expect(over.allowed).toBe(false)
    expect(over.exceeded).toBe('compute units per second')
    expect(over.neverFits).toBeFalsy()
    // The refused 60 CU were not counted: 50 still fit, and the request count did not move.
    const fits = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 50 }, T0)
    expect(fits.allowed).toBe(true)
    expect(fits.remaining).toBe(8)
  })

  it('marks a cost larger than the whole per-second budget as never fitting', async () => {
    const l = make()
    const d = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 201 }, T0)
    expect(d.allowed).toBe(false)
    expect(d.neverFits).toBe(true)
    expect(d.exceeded).toBe('compute units per second')
  })

  it('enforces the daily request limit with a Retry-After until the UTC day ends', async () => {
    const l = make()
    const limits = { requestsPerSecond: null, requestsPerDay: 3, computeUnitsPerSecond: null }
    for (let i = 0; i < 3; i++)
      expect((await l.consume('acct', limits, one, T0 + i * 1000)).allowed).toBe(true)
    const d = await l.consume('acct', limits, one, T0 + 5000)
    expect(d.allowed).toBe(false)
    expect(d.exceeded).toBe('requests per day')
    expect(d.retryAfterSeconds).toBe(12 * 3600 - 5)
  })

  it('never limits an unlimited plan', async () => {
    const l = make()
    for (let i = 0; i < 50; i++) {
      const d = await l.consume('acct', PLANS.enterprise, { requests: 1, computeUnits: 10_000 }, T0)
      expect(d.allowed).toBe(true)
      expect(d.limit).toBeNull()
    }
  })

  it('is atomic under concurrency: exactly the limit is admitted', async () => {
    const l = make()
    const results = await Promise.all(
      Array.from({ length: 50 }, () => l.consume('acct', PLANS.free, one, T0)),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(10)
  })

  if (impl.name === 'redis') {
    it('two limiters on one Redis share one limit', async () => {
      const prefix = `halyard:test:${randomBytes(6).toString('hex')}`
      const a = new RedisRateLimiter(redisUrl as string, prefix)
      const b = new RedisRateLimiter(redisUrl as string, prefix)
      open.push(a, b)
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).consume('acct', PLANS.free, one, T0)),
      )
      expect(results.filter((r) => r.allowed)).toHaveLength(10)
    })
  }
})
