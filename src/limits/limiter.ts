import type { PlanLimits } from './plans.ts'

export type LimitName = 'requests per second' | 'requests per day' | 'compute units per second'

export interface LimitCost {
  /** Requests to count (1 per HTTP request or WebSocket message; 0 for a CU-only charge). */
  readonly requests: number
  readonly computeUnits: number
}

export interface LimitDecision {
  readonly allowed: boolean
  /** Which limit refused the request, when it was refused. */
  readonly exceeded?: LimitName
  /** Requests per second of the plan (X-RateLimit-Limit); null = unlimited. */
  readonly limit: number | null
  /** Requests left in the current one-second window (X-RateLimit-Remaining). */
  readonly remaining: number | null
  /** Unix seconds when the current window resets (X-RateLimit-Reset). */
  readonly resetAt: number
  /** Seconds until a retry can succeed (Retry-After), when refused. */
  readonly retryAfterSeconds?: number
  /** The cost itself can never fit in one window (e.g. a batch above the CU/s limit). */
  readonly neverFits?: boolean
}

/**
 * Fixed windows: one second for requests and compute units, one UTC day for requests.
 * `consume` is all-or-nothing: a refused request consumes nothing, so a 429 costs nothing.
 */
export interface RateLimiter {
  consume(accountId: string, limits: PlanLimits, cost: LimitCost, nowMs?: number): Promise<LimitDecision>
  /** The same decision without a promise, for limiters that need no I/O (in-process). */
  consumeSync?(accountId: string, limits: PlanLimits, cost: LimitCost, nowMs?: number): LimitDecision
  /**
   * The decision without a promise when the limiter can take it without I/O this time (the
   * Redis limiter's lease, lease.ts); undefined means: call `consume`.
   */
  tryConsumeSync?(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs?: number,
  ): LimitDecision | undefined
  close(): Promise<void>
}

export const DAY_MS = 86_400_000

/** No limit to count against (enterprise): callers may decide without the limiter's counters. */
export function isUnlimited(l: PlanLimits): boolean {
  return l.requestsPerSecond === null && l.requestsPerDay === null && l.computeUnitsPerSecond === null
}

let unlimitedNow: LimitDecision = { allowed: true, limit: null, remaining: null, resetAt: 0 }

/**
 * The decision for an unlimited plan (enterprise, most of the load): the same object for
 * every request of one second, so nothing is allocated or compared per request, and callers
 * may cache what they derive from it (headers) by identity.
 */
export function unlimitedDecision(nowMs: number): LimitDecision {
  const resetAt = Math.floor(nowMs / 1000) + 1
  if (unlimitedNow.resetAt !== resetAt) {
    unlimitedNow = Object.freeze({ allowed: true, limit: null, remaining: null, resetAt })
  }
  return unlimitedNow
}

/**
 * A refusal, keys in one order for every limit (the same object shape the limiter always sent);
 * `neverFits` only when the cost alone can never fit.
 */
function refuse(
  base: { limit: number | null; resetAt: number; remaining: number | null },
  exceeded: LimitName,
  retryAfterSeconds: number,
  neverFits?: true,
): LimitDecision {
  return {
    limit: base.limit,
    resetAt: base.resetAt,
    allowed: false,
    exceeded,
    remaining: base.remaining,
    retryAfterSeconds,
    ...(neverFits ? { neverFits } : {}),
  }
}

/** The shared decision logic, given the counters of the current windows. */
export function decide(
  limits: PlanLimits,
  cost: LimitCost,
  used: { second: number; cu: number; day: number },
  nowMs: number,
): LimitDecision {
  if (isUnlimited(limits)) return unlimitedDecision(nowMs)
  const second = Math.floor(nowMs / 1000)
  const resetAt = second + 1
  const secondsToNextSecond = 1
  const dayEnd = (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS
  const rps = limits.requestsPerSecond
  const remainingBefore = rps === null ? null : Math.max(0, rps - used.second)
  const base = { limit: rps, resetAt, remaining: remainingBefore }

  if (limits.computeUnitsPerSecond !== null && cost.computeUnits > limits.computeUnitsPerSecond) {
    return refuse(base, 'compute units per second', secondsToNextSecond, true)
  }
  if (rps !== null && used.second + cost.requests > rps) {
    return refuse(base, 'requests per second', secondsToNextSecond)
  }
  if (limits.requestsPerDay !== null && used.day + cost.requests > limits.requestsPerDay) {
    return refuse(base, 'requests per day', Math.max(1, Math.ceil((dayEnd - nowMs) / 1000)))
  }
  if (limits.computeUnitsPerSecond !== null && used.cu + cost.computeUnits > limits.computeUnitsPerSecond) {
    return refuse(base, 'compute units per second', secondsToNextSecond)
  }
  // The common case, written out: no spread per request.
  return {
    allowed: true,
    limit: rps,
    remaining: rps === null ? null : Math.max(0, rps - used.second - cost.requests),
    resetAt,
  }
}
