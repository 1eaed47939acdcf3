import { decide, type LimitCost, type LimitDecision } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * A lease: part of an account's budget for one second, reserved in Redis (counted there as
 * used) by one limiter, which then spends it in process without a round trip. The Redis
 * limiter (redis-limiter.ts) asks for one with every script run, after the run's own calls.
 *
 * Size: a tenth of each per-second limit (and of the day's), capped, and never more than what
 * remains. A limit too small for a lease of MIN_LEASE requests gets none: every call goes to
 * Redis, as before leases (the free plan's 10 requests per second are decided one by one).
 *
 * What it changes, and what not:
 * - Never more than the limit: a lease is reserved atomically in the same counters every
 *   limiter checks, so the sum of calls admitted anywhere stays within each limit.
 * - One limiter (one process on Redis): exact. Unused lease goes back to Redis (`giveBack`)
 *   in the same script run that decides the call the lease could not cover, so that run sees
 *   the true counters.
 * - Several limiters (workers, instances): each one's unused lease counts as used for the
 *   others until it is given back, so near the end of a busy second a call may be refused up
 *   to (limiters − 1) × lease size early (≤ 10 % of the limit per other limiter). X-RateLimit-
 *   Remaining is this limiter's view: the counters at its last script run plus its own calls.
 * - Day counter: a lease's unused requests are given back when its second is over (on the
 *   account's next call, or by the sweep a second later for an idle account). A process that
 *   dies holding a lease leaves at most one lease size counted on that day.
 */
export interface Lease {
  readonly accountId: string
  readonly second: number
  readonly day: number
  readonly limits: PlanLimits
  /** Reserved and not yet spent; Infinity for a dimension the plan does not limit. */
  leftRequests: number
  leftComputeUnits: number
  /** The window's counters as this limiter knows them, without its own unspent lease. */
  used: { second: number; cu: number; day: number }
}

/** What is reserved and unspent, to subtract in Redis (finite parts only). */
export interface GiveBack {
  readonly accountId: string
  readonly second: number
  readonly day: number
  readonly requests: number
  readonly computeUnits: number
}

/** A lease is this share of the per-second limit (and of the day's). */
const LEASE_FRACTION = 10
/** Below this many requests (or CU) per lease, the limit is decided in Redis call by call. */
export const MIN_LEASE = 5
/** Bounds what a crashed process can leave counted against a day. */
const MAX_LEASE = 100_000

const share = (limit: number | null) => (limit === null ? Infinity : Math.floor(limit / LEASE_FRACTION))

/**
 * The lease to ask for with these limits: requests and compute units, -1 for a dimension the
 * plan does not limit; undefined when a limit is too small to lease.
 */
export function leaseWanted(l: PlanLimits): { requests: number; computeUnits: number } | undefined {
  const requests = Math.min(share(l.requestsPerSecond), share(l.requestsPerDay))
  const computeUnits = share(l.computeUnitsPerSecond)
  // Nothing limited (enterprise): nothing to reserve.
  if (requests === Infinity && computeUnits === Infinity) return undefined
  if (requests < MIN_LEASE || computeUnits < MIN_LEASE) return undefined
  return {
    requests: requests === Infinity ? -1 : Math.min(requests, MAX_LEASE),
    computeUnits: computeUnits === Infinity ? -1 : Math.min(computeUnits, MAX_LEASE * 100),
  }
}

/**
 * Spends a call from the lease when it covers it: the same decision `decide` gives with the
 * counters this limiter knows (always allowed, as the lease was within every limit).
 */
export function spend(lease: Lease, cost: LimitCost, nowMs: number): LimitDecision | undefined {
  if (cost.requests > lease.leftRequests || cost.computeUnits > lease.leftComputeUnits) return undefined
  const d = decide(lease.limits, cost, lease.used, nowMs)
  if (!d.allowed) return undefined
  lease.leftRequests -= cost.requests
  lease.leftComputeUnits -= cost.computeUnits
  lease.used.second += cost.requests
  lease.used.cu += cost.computeUnits
  lease.used.day += cost.requests
  return d
}

/** The unspent part of a lease, to give back to Redis; undefined when nothing is left. */
export function unspent(lease: Lease): GiveBack | undefined {
  const requests = Number.isFinite(lease.leftRequests) ? lease.leftRequests : 0
  const computeUnits = Number.isFinite(lease.leftComputeUnits) ? lease.leftComputeUnits : 0
  if (requests === 0 && computeUnits === 0) return undefined
  return { accountId: lease.accountId, second: lease.second, day: lease.day, requests, computeUnits }
}
