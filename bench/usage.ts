/**
 * npm run bench:usage — what counting usage (src/usage/recorder.ts) adds to one charge on the
 * hot path: `Charger.chargeDirect` (what the JSON-RPC fast lane calls per request) with the
 * usage recorder attached, against the same charger without it, in the same run. Callers are
 * spread over BENCH_ACCOUNTS accounts × 20 method labels, like real traffic; the recorder
 * never flushes here (its database is never touched), so only the in-memory counting is timed.
 * Two rows: an unlimited account (no limiter work, so the recorder's share is largest) and a
 * limited one through the in-process limiter. Best of BENCH_ROUNDS (7) interleaved rounds of BENCH_CHARGES.
 * In-process and CPU-only: no servers, no network.
 */
import type { Caller } from '../src/auth/service.ts'
import { Charger } from '../src/http/charge.ts'
import { MemoryRateLimiter } from '../src/limits/memory-limiter.ts'
import type { PlanLimits } from '../src/limits/plans.ts'
import { createLogger } from '../src/logger.ts'
import { Metrics } from '../src/metrics.ts'
import type { DB } from '../src/storage/database.ts'
import { UsageRecorder } from '../src/usage/recorder.ts'

const CHARGES = Number(process.env.BENCH_CHARGES ?? 1_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1_000)
const METHODS = Array.from({ length: 20 }, (_, i) => `eth_method${i}`)

const UNLIMITED: PlanLimits = { requestsPerSecond: null, requestsPerDay: null, computeUnitsPerSecond: null }
// Limits no run reaches: every charge goes through the limiter's counters and is admitted.
const LIMITED: PlanLimits = { requestsPerSecond: 1e12, requestsPerDay: 1e15, computeUnitsPerSecond: 1e15 }

function callers(limits: PlanLimits): Caller[] {
  return Array.from({ length: ACCOUNTS }, (_, i) => ({
    keyId: `key_${i}`,
    env: 'live',
    scopes: new Set(),
    accountId: `acct_${i}`,
    email: `a${i}@bench.local`,
    plan: 'bench',
    limits,
    unlimited: limits === UNLIMITED,
  }))
}

/** Mean ns per charge. */
function time(charger: Charger, who: Caller[]): number {
  const started = performance.now()
  for (let i = 0; i < CHARGES; i++) {
    charger.chargeDirect(who[i % ACCOUNTS]!, 1, '/v1/rpc/:chain/:network', METHODS[i % METHODS.length])
  }
  return ((performance.now() - started) * 1e6) / CHARGES
}

function row(name: string, limits: PlanLimits): void {
  const who = callers(limits)
  const bare = new Charger(new MemoryRateLimiter(), new Metrics())
  const counted = new Charger(new MemoryRateLimiter(), new Metrics())
  // Never flushed in this bench, so it never reaches the database.
  counted.recordUsageInto(new UsageRecorder(undefined as unknown as DB, createLogger('silent')))
  time(bare, who) // warm-up (JIT)
  time(counted, who)
  // Interleaved rounds, best of each: a busy neighbour slows both alike.
  let without = Number.POSITIVE_INFINITY
  let withUsage = Number.POSITIVE_INFINITY
  for (let r = 0; r < ROUNDS; r++) {
    without = Math.min(without, time(bare, who))
    withUsage = Math.min(withUsage, time(counted, who))
  }
  console.log(
    `${name.padEnd(10)} without usage ${without.toFixed(0).padStart(5)} ns/charge, with usage ${withUsage
      .toFixed(0)
      .padStart(
        5,
      )} ns/charge: ratio ${(withUsage / without).toFixed(2)}x (+${(withUsage - without).toFixed(0)} ns)`,
  )
}

console.log(
  `${CHARGES} charges per round over ${ACCOUNTS} accounts × ${METHODS.length} methods, best of ${ROUNDS}`,
)
row('unlimited', UNLIMITED)
row('limited', LIMITED)
