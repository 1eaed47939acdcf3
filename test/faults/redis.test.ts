import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AnvilProcess, startAnvil } from '../../src/devnet/anvil.ts'
import { DAY_MS } from '../../src/limits/limiter.ts'
import { utcDay } from '../../src/usage/service.ts'
import { usagePerDay } from '../../src/usage/store.ts'
import { anvilNetwork, startTestHalyard } from '../helpers/halyard.ts'
import { storageBackends } from '../helpers/storage.ts'
import { until } from '../helpers/until.ts'
import { type FaultRow, printFaultTable, type Sample, statusSummary, steadyLoad } from './keyed-load.ts'
import { type PrivateRedis, privateRedisSkipReason, startPrivateRedis } from './private-redis.ts'

/**
 * Redis killed and restored, and Redis frozen (SIGSTOP/SIGCONT), under a steady keyed load at
 * 40 % of the growth plan's 100 requests per second, against a Redis of the test's own
 * (docs/dependency-failures.md). What clients may see: never a 500, no 429 the load does
 * not earn, a limited key failing closed gets 503 + Retry-After; and the day counters (Redis's
 * and the usage rows) equal the requests admitted.
 */

const skip = privateRedisSkipReason()
/** The promised wait: HALYARD_REDIS_TIMEOUT, plus slack for a shared, loaded test machine. */
const REDIS_TIMEOUT_MS = 500
const LATENCY_BOUND_MS = REDIS_TIMEOUT_MS + 2_000
const FAULT_MS = 3_000
const rows: FaultRow[] = []

type Fault = 'kill' | 'freeze'

describe.skipIf(skip !== undefined)(`Redis faults under keyed load${skip ? ` (${skip})` : ''}`, () => {
  let anvil: AnvilProcess
  let redis: PrivateRedis

  beforeAll(async () => {
    anvil = await startAnvil()
    redis = await startPrivateRedis()
  })
  afterAll(async () => {
    printFaultTable('Redis faults (40 rps on a 100 rps key, 3 s fault)', rows)
    await redis?.stop()
    await anvil?.stop()
  })

  async function scenario(fault: Fault, fallback: 'local' | 'closed') {
    const storage = await storageBackends()[0]!.open()
    const h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      env: {
        REDIS_URL: redis.url,
        HALYARD_REDIS_TIMEOUT: `${REDIS_TIMEOUT_MS}ms`,
        HALYARD_REDIS_FALLBACK: fallback,
      },
    })
    const email = `fault-${randomBytes(4).toString('hex')}@test.local`
    const key = await h.createKey({ plan: 'growth', email })
    const unlimited = await h.createKey({ plan: 'enterprise' })
    const account = await h.halyard.ctx.auth.accountByEmail(email)
    const dayKey = `halyard:rl:${account.id}:d:${Math.floor(Date.now() / DAY_MS)}`
    const probe = redis.client()
    const url = `${h.baseUrl}/rpc/ethereum/devnet`
    const dayCount = async () => Number((await probe.get(dayKey).catch(() => null)) ?? 0)

    const load = steadyLoad(url, key, 4, 100)
    const side = steadyLoad(url, unlimited, 1, 200)
    await new Promise((r) => setTimeout(r, 2_000))
    const faultAt = Date.now()
    if (fault === 'kill') await redis.kill()
    else redis.freeze()
    await new Promise((r) => setTimeout(r, FAULT_MS))
    if (fault === 'kill') await redis.restart()
    else redis.thaw()
    const restoredAt = Date.now()
    // Recovery: the key's requests are counted in Redis again.
    const before = await dayCount()
    const recovered = await until(
      'the day counter to move again',
      async () => (await dayCount()) > before,
      15_000,
    )
      .then(() => Date.now() - restoredAt)
      .catch(() => undefined)
    await new Promise((r) => setTimeout(r, 3_000))
    const samples = await load.stop()
    const sideSamples = await side.stop()
    const admitted = samples.filter((s) => s.status === 200).length
    const admittedSinceFault = samples.filter((s) => s.status === 200 && s.sentAt >= faultAt).length
    // Unspent leases go back a second after their window; then Redis's count should be exact.
    const expected = fault === 'kill' ? admittedSinceFault : admitted
    // Sent before the kill but decided after it (by the local fallback, whose counts go to the
    // restarted Redis): counted there once, though not among those sent since the fault.
    const straddling = samples.filter(
      (s) => s.status === 200 && s.sentAt < faultAt && s.sentAt + s.ms >= faultAt,
    )
    await until('the day counter to settle', async () => (await dayCount()) === expected, 5_000).catch(
      () => {},
    )
    const counted = await dayCount()
    await h.close()
    const today = utcDay(Date.now())
    const usage = await usagePerDay(storage.db, account.id, utcDay(faultAt - DAY_MS), today)
    await storage.close()
    const used = usage.reduce((n, d) => n + d.requests, 0)

    const during = samples.filter((s) => s.sentAt >= faultAt && s.sentAt < restoredAt)
    const after = samples.filter((s) => s.sentAt >= restoredAt)
    const slowest = Math.max(...samples.map((s) => s.ms))
    rows.push({
      fault: `Redis ${fault === 'kill' ? 'killed + restarted' : 'frozen (SIGSTOP/CONT)'}, fallback=${fallback}`,
      clientVisible: `during: ${statusSummary(during)}; after: ${statusSummary(after)}; slowest ${slowest} ms; unlimited key: ${statusSummary(sideSamples)}`,
      lost: `usage ${used} vs ${admitted} admitted`,
      duplicated: `Redis day ${counted} vs ${expected} admitted${fault === 'kill' ? ' since the kill' : ''}`,
      recovery:
        recovered === undefined ? 'counter never moved in 15 s' : `${recovered} ms to count in Redis again`,
    })
    return {
      samples,
      during,
      after,
      sideSamples,
      admitted,
      expected,
      counted,
      used,
      slowest,
      straddling: straddling.length,
    }
  }

  const checkCommon = (r: Awaited<ReturnType<typeof scenario>>) => {
    expect(r.samples.filter((s) => s.status >= 500 && s.status !== 503)).toEqual([])
    expect(r.samples.filter((s) => s.status === 0)).toEqual([])
    expect(r.slowest).toBeLessThan(LATENCY_BOUND_MS)
    expect(r.sideSamples.every((s) => s.status === 200)).toBe(true)
    // Nothing a client was told failed is counted, nothing admitted is missing.
    expect(r.used).toBe(r.admitted)
  }

  for (const fault of ['kill', 'freeze'] as const) {
    it(`Redis ${fault}: limits fall back to the local allowance, no 500, no spurious 429, counts equal admitted`, async () => {
      const r = await scenario(fault, 'local')
      checkCommon(r)
      expect(r.samples.filter((s: Sample) => s.status !== 200)).toEqual([])
      // A frozen Redis kept its data: its day count is exact. A killed one lost what it held
      // before the kill (no persistence), including what it decided for requests sent just
      // before or spent from a lease it had granted: at most the 4 in flight and the lease the
      // process held. That lease is one (10) or, when two script runs of the account overlap
      // in one second (a slow round trip: it read 17 missing, 260 for 277, on a loaded CI
      // machine), two merged into one (RedisRateLimiter's `grant`): 24. It still fails on what
      // matters: the ≈ 120 requests admitted locally during the outage not reaching Redis.
      // None is counted twice: above the admitted since the kill only by the requests in flight
      // at the kill that the fallback decided (it failed once by 2 when only the admitted since
      // were allowed).
      if (fault === 'freeze') expect(r.counted).toBe(r.expected)
      else {
        expect(r.counted).toBeLessThanOrEqual(r.expected + r.straddling)
        expect(r.counted).toBeGreaterThanOrEqual(r.expected - 24)
      }
    }, 90_000)
  }

  it('Redis frozen with HALYARD_REDIS_FALLBACK=closed: limited keys get 503 + Retry-After, served again after', async () => {
    const r = await scenario('freeze', 'closed')
    checkCommon(r)
    const refused = r.samples.filter((s) => s.status === 503)
    expect(refused.length).toBeGreaterThan(0)
    for (const s of refused) {
      expect(s.code).toBe('service_unavailable')
      expect(Number(s.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    expect(r.samples.filter((s) => s.status === 429)).toEqual([])
    // Served again once Redis answers: the last second of the run is all 200.
    const end = Math.max(...r.after.map((s) => s.sentAt))
    expect(r.after.filter((s) => s.sentAt > end - 1_000).every((s) => s.status === 200)).toBe(true)
    expect(r.counted).toBe(r.expected)
  }, 90_000)
})
