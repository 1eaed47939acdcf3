import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

interface Counters {
  /** The windows the counts are for. */
  second: number
  day: number
  /** Passed to `decide` as it is: no object per call. */
  readonly used: { second: number; cu: number; day: number }
}

/** In-process limiter for a single instance. JavaScript's single thread makes it atomic. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly counters = new Map<string, Counters>()
  private sweepAt = 0

  async consume(accountId: string, limits: PlanLimits, cost: LimitCost, nowMs = Date.now()) {
    return this.consumeSync(accountId, limits, cost, nowMs)
  }

  consumeSync(accountId: string, limits: PlanLimits, cost: LimitCost, nowMs = Date.now()): LimitDecision {
    const second = Math.floor(nowMs / 1000)
    let c = this.counters.get(accountId)
    if (!c) {
      c = { second, day: Math.floor(nowMs / DAY_MS), used: { second: 0, cu: 0, day: 0 } }
      this.counters.set(accountId, c)
    }
    const used = c.used
    if (c.second !== second) {
      c.second = second
      used.second = 0
      used.cu = 0
      // The day can only change with the second.
      const day = Math.floor(nowMs / DAY_MS)
      if (c.day !== day) {
        c.day = day
        used.day = 0
      }
      this.sweep(day, nowMs)
    }
    const decision = decide(limits, cost, used, nowMs)
    if (decision.allowed) {
      used.second += cost.requests
      used.cu += cost.computeUnits
      used.day += cost.requests
    }
    return decision
  }

  /** Drops counters of accounts idle since an earlier day, so memory tracks active accounts. */
  private sweep(day: number, nowMs: number) {
    if (nowMs < this.sweepAt) return
    this.sweepAt = nowMs + 60_000
    for (const [id, c] of this.counters) if (c.day !== day) this.counters.delete(id)
  }

  async close() {}
}
