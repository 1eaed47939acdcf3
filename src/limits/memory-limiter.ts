import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

interface Counters {
  second: number
  secondCount: number
  cu: number
  day: number
  dayCount: number
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
    const day = Math.floor(nowMs / DAY_MS)
    let c = this.counters.get(accountId)
    if (!c) {
      c = { second, secondCount: 0, cu: 0, day, dayCount: 0 }
      this.counters.set(accountId, c)
    }
    if (c.second !== second) {
      c.second = second
      c.secondCount = 0
      c.cu = 0
    }
    if (c.day !== day) {
      c.day = day
      c.dayCount = 0
    }
    const decision = decide(limits, cost, { second: c.secondCount, cu: c.cu, day: c.dayCount }, nowMs)
    if (decision.allowed) {
      c.secondCount += cost.requests
      c.cu += cost.computeUnits
      c.dayCount += cost.requests
    }
    this.sweep(day, nowMs)
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
