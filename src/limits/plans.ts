/** Plan limits (docs/concepts.md). `null` means unlimited (enterprise, unless set per account). */
export interface PlanLimits {
  readonly requestsPerSecond: number | null
  readonly requestsPerDay: number | null
  readonly computeUnitsPerSecond: number | null
}

export const PLANS = {
  free: { requestsPerSecond: 10, requestsPerDay: 100_000, computeUnitsPerSecond: 200 },
  growth: { requestsPerSecond: 100, requestsPerDay: 5_000_000, computeUnitsPerSecond: 2_000 },
  enterprise: { requestsPerSecond: null, requestsPerDay: null, computeUnitsPerSecond: null },
} as const satisfies Record<string, PlanLimits>

export type PlanName = keyof typeof PLANS

export const PLAN_NAMES = Object.keys(PLANS) as PlanName[]

export const isPlanName = (p: string): p is PlanName => p in PLANS

/**
 * WebSocket limits per plan (src/ws): concurrent connections per account (null = unlimited) and
 * subscriptions per connection (always bounded: each one costs memory and fan-out work).
 */
export interface WsPlanLimits {
  readonly connectionsPerAccount: number | null
  readonly subscriptionsPerConnection: number
}

export const WS_PLAN_LIMITS = {
  free: { connectionsPerAccount: 10, subscriptionsPerConnection: 25 },
  growth: { connectionsPerAccount: 250, subscriptionsPerConnection: 250 },
  enterprise: { connectionsPerAccount: null, subscriptionsPerConnection: 1_000 },
} as const satisfies Record<PlanName, WsPlanLimits>

export function wsLimitsFor(plan: string): WsPlanLimits {
  return isPlanName(plan) ? WS_PLAN_LIMITS[plan] : WS_PLAN_LIMITS.free
}

/** The plan's limits with any per-account overrides applied. */
export function effectiveLimits(
  plan: string,
  overrides: { rps: number | null; rpd: number | null; cups: number | null },
): PlanLimits {
  const base: PlanLimits = isPlanName(plan) ? PLANS[plan] : PLANS.free
  return {
    requestsPerSecond: overrides.rps ?? base.requestsPerSecond,
    requestsPerDay: overrides.rpd ?? base.requestsPerDay,
    computeUnitsPerSecond: overrides.cups ?? base.computeUnitsPerSecond,
  }
}
