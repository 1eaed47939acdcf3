import { HalyardError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { LimitCost, LimitDecision } from './limiter.ts'
import { MemoryRateLimiter } from './memory-limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * What the Redis limiter does while Redis does not answer within its deadline
 * (docs/dependency-failures.md):
 * - `local` (default): each process decides limits itself, in process, within its share of the
 *   plan's limits (the limits divided by `processes`, the expected number of limiter processes:
 *   instances × workers). What it admits is remembered and added to Redis's day counters when
 *   Redis answers again, so the day counts stay equal to the requests admitted.
 * - `closed`: limited keys are answered 503 with Retry-After; nothing is counted.
 * Unlimited plans never consult the limiter, so they are served either way.
 */
export type RedisFallback = 'local' | 'closed'

export interface OutageOptions {
  fallback: RedisFallback
  /** Instances × workers sharing the Redis: each one's local share is 1/processes of a limit. */
  processes: number
  logger?: Logger
  /** State changes and decisions taken without Redis (src/metrics.ts). */
  onState?(up: boolean): void
  onFallback?(outcome: 'allowed' | 'refused' | 'unavailable'): void
}

/** Requests (per account and UTC day) to add to or take back from Redis's day counters. */
export interface DayDelta {
  accountId: string
  day: number
  /** Admitted locally while Redis was out: to add. */
  admitted: number
  /** Unspent leases whose give-back did not reach Redis: to subtract, if Redis kept its data. */
  back: number
}

const share = (limit: number | null, processes: number) =>
  limit === null ? null : Math.max(1, Math.floor(limit / processes))

/**
 * Settles as `p` does, or rejects once `ms` have passed. A wait on Redis must not depend on the
 * client library's connection state: its command timeout is armed per command, so a script that
 * is answered NOSCRIPT and sent again, or a command held while the connection is set up, could
 * otherwise wait longer than the limiter's timeout.
 *
 * The timeout is judged after one poll phase of the event loop: when the process was stalled
 * (a long GC, a loaded machine) past the deadline, its timers run before the poll phase that
 * reads what arrived meanwhile, and an answer already in the socket would be called late. A
 * script Redis ran, taken for one it did not, has its outcome applied twice — the calls it
 * decided are decided again locally and its lease give-back is subtracted again.
 */
export function withinDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const late = () => reject(new Error(`redis did not answer within ${ms} ms`))
    const timer = setTimeout(() => setImmediate(late), Math.max(0, ms))
    p.then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err)
      },
    )
  })
}

/** Seconds a fail-closed client is told to wait: about one reconnect attempt. */
const RETRY_AFTER_SECONDS = 1

/**
 * The limiter's view of Redis: up or down, the one log line per change, the local allowance
 * while down, and what it must tell Redis once Redis is back.
 */
export class RedisOutage {
  private down = false
  private everUp = false
  private readonly local = new MemoryRateLimiter()
  /** Per account and day: requests admitted locally and give-backs that failed. */
  private pending = new Map<string, DayDelta>()
  /** Each account's day count as Redis last reported it: the local day allowance starts there. */
  private readonly seenDay = new Map<string, { day: number; used: number }>()
  /** Decisions taken without Redis since it went down (logged when it comes back). */
  private decidedLocally = 0
  private downSince = 0

  constructor(private readonly opts: OutageOptions) {}

  /** Calls are decided without Redis until it answers again. */
  get isDown(): boolean {
    return this.down
  }

  /** Redis answered: logs the recovery once. */
  markUp(): void {
    this.everUp = true
    if (!this.down) return
    this.down = false
    this.opts.onState?.(true)
    this.opts.logger?.warn(
      { downForMs: Date.now() - this.downSince, decidedWithoutRedis: this.decidedLocally },
      'redis answers again: rate limits are decided in Redis',
    )
    this.decidedLocally = 0
  }

  /** A script run failed or timed out: logs the outage once (not per request). */
  markDown(err: unknown): void {
    if (this.down) return
    this.down = true
    this.downSince = Date.now()
    this.opts.onState?.(false)
    this.opts.logger?.error(
      {
        err: err instanceof Error ? err.message : String(err),
        fallback: this.opts.fallback,
        sinceStart: !this.everUp,
      },
      this.opts.fallback === 'local'
        ? 'redis does not answer: rate limits fall back to a local allowance per process'
        : 'redis does not answer: rate-limited keys get 503 until it does',
    )
  }

  hasPending(): boolean {
    return this.pending.size > 0
  }

  /** Remembers the day count Redis reported for an account (after its calls). */
  sawDay(accountId: string, day: number, used: number): void {
    this.seenDay.set(accountId, { day, used })
  }

  /**
   * The decision without Redis: the local allowance, or the 503 (thrown) when failing closed.
   * What it admits is kept for Redis's day counter.
   */
  decide(accountId: string, limits: PlanLimits, cost: LimitCost, nowMs: number, day: number): LimitDecision {
    this.decidedLocally++
    if (this.opts.fallback === 'closed') {
      this.opts.onFallback?.('unavailable')
      throw new HalyardError(
        'service_unavailable',
        'rate limits are temporarily unavailable; retry shortly',
        {
          'retry-after': String(RETRY_AFTER_SECONDS),
        },
      )
    }
    const n = this.opts.processes
    const seen = this.seenDay.get(accountId)
    const usedToday = seen && seen.day === day ? seen.used : 0
    const local: PlanLimits = {
      requestsPerSecond: share(limits.requestsPerSecond, n),
      computeUnitsPerSecond: share(limits.computeUnitsPerSecond, n),
      requestsPerDay:
        limits.requestsPerDay === null
          ? null
          : Math.floor(Math.max(0, limits.requestsPerDay - usedToday) / n),
    }
    const d = this.local.consumeSync(accountId, local, cost, nowMs)
    this.opts.onFallback?.(d.allowed ? 'allowed' : 'refused')
    if (d.allowed && cost.requests > 0) this.delta(accountId, day).admitted += cost.requests
    return d
  }

  /** An unspent lease could not be given back: subtract it once Redis answers (if it kept it). */
  giveBackLater(accountId: string, day: number, requests: number): void {
    if (requests > 0) this.delta(accountId, day).back += requests
  }

  private delta(accountId: string, day: number): DayDelta {
    const k = `${accountId}:${day}`
    let d = this.pending.get(k)
    if (!d) {
      d = { accountId, day, admitted: 0, back: 0 }
      this.pending.set(k, d)
    }
    return d
  }

  /** What Redis must be told; `restore` puts it back if telling failed. */
  takePending(): DayDelta[] {
    const out = [...this.pending.values()]
    this.pending = new Map()
    return out
  }

  restore(deltas: readonly DayDelta[]): void {
    for (const d of deltas) {
      const p = this.delta(d.accountId, d.day)
      p.admitted += d.admitted
      p.back += d.back
    }
  }
}
