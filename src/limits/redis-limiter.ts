import { Redis } from 'ioredis'
import { type Lease, leaseWanted, spend, unspent } from './lease.ts'
import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'
import { batchesOf, finite, type Group, sameLimits, scriptCall } from './redis-batch.ts'
import { type OutageOptions, type RedisFallback, RedisOutage, withinDeadline } from './redis-outage.ts'
import { LIMITS_SCRIPT, RECONCILE_SCRIPT } from './redis-scripts.ts'

type LimitRedis = Redis & {
  /** ioredis flattens array arguments one level: numKeys, ...keys, ...args. */
  halyardLimits(numKeys: number, keys: string[], args: number[]): Promise<number[]>
  halyardReconcile(numKeys: number, keys: string[], args: number[]): Promise<number[]>
}

export interface RedisLimiterOptions extends Partial<Omit<OutageOptions, 'fallback'>> {
  /** How long a request waits for Redis before it is decided without it (default 500 ms). */
  timeoutMs?: number
  fallback?: RedisFallback
}

/**
 * How long a script run may wait for Redis (connected or not) before its calls are decided
 * without it (redis-outage.ts): a Redis that accepts connections and never answers must not
 * hang requests.
 */
export const DEFAULT_REDIS_TIMEOUT_MS = 500
/**
 * The script's deadline is this share of the wait: a run Redis executes just in time still
 * has the rest of the wait for its answer to come back before the caller gives up on it.
 */
const DEADLINE_SHARE = 0.8
/** How often a process whose Redis is down tries it again. */
const PROBE_MS = 250
/** Replies faster than this are used to estimate the offset of Redis's clock from ours. */
const CLOCK_SAMPLE_MAX_RTT_MS = 20

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: LimitRedis
  /** This turn's groups in arrival order, and each account's latest one. */
  private groups: Group[] = []
  private readonly latest = new Map<string, Group>()
  private scheduled = false
  /** Each account's lease (lease.ts): calls it covers are decided here, with no round trip. */
  private readonly leases = new Map<string, Lease>()
  private sweepTimer: NodeJS.Timeout | undefined
  private readonly outage: RedisOutage
  private readonly timeoutMs: number
  /** Redis's clock minus ours (ms), from fast replies: script deadlines are on Redis's clock. */
  private clockOffset = 0
  /** Until Redis is first ready, runs wait for it (bounded by the timeout) rather than fall back. */
  private firstReady: Promise<void> | undefined
  private probeTimer: NodeJS.Timeout | undefined
  private reconciling = false
  private closed = false

  constructor(
    url: string,
    private readonly prefix = 'halyard:rl',
    opts: RedisLimiterOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS
    this.outage = new RedisOutage({
      ...opts,
      fallback: opts.fallback ?? 'local',
      processes: opts.processes ?? 1,
    })
    // No auto-pipelining: the limiter already sends one command per turn, and ioredis would
    // wrap each in a Pipeline of its own. No offline queue, no retries, no resending after a
    // reconnect: a call the limiter gave up on was decided without Redis and must never reach
    // it later (the scripts' deadlines guard the commands already written to a frozen socket).
    const redis = new Redis(url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      enableAutoPipelining: false,
      lazyConnect: false,
      commandTimeout: this.timeoutMs,
      connectTimeout: Math.max(this.timeoutMs, 1_000),
    })
    redis.defineCommand('halyardLimits', { lua: LIMITS_SCRIPT })
    redis.defineCommand('halyardReconcile', { lua: RECONCILE_SCRIPT })
    // Connection errors surface as the outage (logged once, redis-outage.ts), not per event.
    redis.on('error', () => {})
    this.redis = redis as LimitRedis
    this.firstReady = new Promise<void>((resolve) => {
      const t = setTimeout(resolve, this.timeoutMs)
      t.unref()
      redis.once('ready', () => {
        clearTimeout(t)
        resolve()
        // Sets the marker that tells a later reconcile whether Redis kept its data.
        void this.reconcile()
      })
    }).then(() => {
      this.firstReady = undefined
    })
  }

  /** Resolves once Redis answered the first time, or its wait ran out (the limiter then falls back). */
  async ready(): Promise<void> {
    await this.firstReady
  }

  /** Redis's deadline for a script sent now. */
  private deadline(sentAt: number): number {
    return Math.floor(sentAt + this.clockOffset + this.timeoutMs * DEADLINE_SHARE)
  }

  private sampleClock(sentAt: number, redisNow: number) {
    const at = Date.now()
    if (at - sentAt <= CLOCK_SAMPLE_MAX_RTT_MS) this.clockOffset = redisNow - (sentAt + at) / 2
  }

  /** Decides without Redis (local allowance, or the 503 thrown when failing closed). */
  private decideLocally(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs: number,
  ): LimitDecision {
    return this.outage.decide(accountId, limits, cost, nowMs, Math.floor(nowMs / DAY_MS))
  }

  /** Redis failed a run: the outage begins (logged once), leases end, and Redis is tried again soon. */
  private wentDown(err: unknown) {
    this.outage.markDown(err)
    for (const lease of [...this.leases.values()]) this.takeBack(lease, undefined)
    this.probeSoon()
  }

  private probeSoon() {
    if (this.probeTimer || this.closed) return
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined
      void this.reconcile()
    }, PROBE_MS)
    this.probeTimer.unref()
  }

  /**
   * Tells Redis what was decided without it (redis-outage.ts); its answer ends the outage.
   * What fails to reach Redis is kept for the next try.
   */
  private async reconcile(): Promise<void> {
    if (this.reconciling || this.closed) return
    this.reconciling = true
    const deltas = this.outage.takePending()
    const keys = [`${this.prefix}:kept`]
    const sentAt = Date.now()
    const args = [this.deadline(sentAt)]
    for (const d of deltas) {
      keys.push(`${this.prefix}:${d.accountId}:d:${d.day}`)
      args.push(d.admitted, d.back)
    }
    let ok = false
    try {
      const out = await withinDeadline(this.redis.halyardReconcile(keys.length, keys, args), this.timeoutMs)
      this.sampleClock(sentAt, out[1] ?? 0)
      ok = out[0] === 1
    } catch {}
    this.reconciling = false
    if (!ok) {
      this.outage.restore(deltas)
      this.probeSoon()
      return
    }
    this.outage.markUp()
    // Decided locally while this ran: told in the next run.
    if (this.outage.hasPending()) void this.reconcile()
  }

  /**
   * The decision at once when the account's lease covers the call (no promise, no Redis);
   * undefined when the call must go to Redis (`consume`). Calls of the account already waiting
   * for this turn's script run keep their order: none is decided ahead of them.
   */
  tryConsumeSync(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs = Date.now(),
  ): LimitDecision | undefined {
    if (this.outage.isDown) return this.decideLocally(accountId, limits, cost, nowMs)
    const lease = this.leases.get(accountId)
    if (
      lease === undefined ||
      lease.second !== Math.floor(nowMs / 1000) ||
      !sameLimits(lease.limits, limits) ||
      this.latest.has(accountId)
    )
      return undefined
    return spend(lease, cost, nowMs)
  }

  consume(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs = Date.now(),
  ): Promise<LimitDecision> {
    let quick: LimitDecision | undefined
    try {
      quick = this.tryConsumeSync(accountId, limits, cost, nowMs)
    } catch (err) {
      return Promise.reject(err)
    }
    if (quick) return Promise.resolve(quick)
    const second = Math.floor(nowMs / 1000)
    // A lease of an earlier second goes back first: this call's day count must not include it.
    const stale = this.leases.get(accountId)
    if (stale && stale.second !== second) this.takeBack(stale, undefined)
    let group = this.latest.get(accountId)
    if (!group || group.second !== second || !sameLimits(group.limits, limits)) {
      group = {
        accountId,
        second,
        day: Math.floor(nowMs / DAY_MS),
        limits,
        calls: [],
        back: { requests: 0, computeUnits: 0 },
        want: leaseWanted(limits),
      }
      this.groups.push(group)
      this.latest.set(accountId, group)
    }
    // The lease could not cover this call: what is left of it goes back before the call is decided.
    const lease = this.leases.get(accountId)
    if (lease) this.takeBack(lease, group)
    const calls = group.calls
    this.schedule()
    return new Promise<LimitDecision>((resolve, reject) => {
      calls.push({ cost, nowMs, resolve, reject })
    })
  }

  private schedule() {
    if (this.scheduled) return
    this.scheduled = true
    // After the turn's I/O callbacks: every request read in this turn joins one script run.
    setImmediate(() => void this.flush())
  }

  /** Ends a lease: its unspent part joins `group` (same second) or a run of its own. */
  private takeBack(lease: Lease, group: Group | undefined) {
    this.leases.delete(lease.accountId)
    const back = unspent(lease)
    if (!back) return
    if (this.outage.isDown) return this.outage.giveBackLater(back.accountId, back.day, back.requests)
    if (group && group.second === back.second && group.day === back.day) {
      group.back.requests += back.requests
      group.back.computeUnits += back.computeUnits
      return
    }
    this.groups.push({
      accountId: back.accountId,
      second: back.second,
      day: back.day,
      limits: lease.limits,
      calls: [],
      back: { requests: back.requests, computeUnits: back.computeUnits },
      want: undefined,
    })
    this.schedule()
  }

  private flush(): Promise<unknown> {
    this.scheduled = false
    const groups = this.groups
    this.groups = []
    this.latest.clear()
    const runs = batchesOf(groups).map((batch) => this.run(batch))
    return Promise.all(runs)
  }

  private async run(batch: readonly Group[]) {
    // One deadline for the whole wait (first connect included): Redis counts the run only
    // before it, and the calls are decided without Redis once it has passed.
    const startedAt = Date.now()
    const { keys, args } = scriptCall(this.prefix, batch, this.deadline(startedAt))
    let out: number[]
    let gaveUp = false
    let sentAt = startedAt
    const answer = async () => {
      if (this.firstReady) await this.firstReady
      // Given up while waiting for the first connect: nothing is sent (it would not count anyway).
      if (gaveUp) throw new Error('redis was not ready within the timeout')
      sentAt = Date.now()
      return this.redis.halyardLimits(keys.length, keys, args)
    }
    try {
      out = await withinDeadline(answer(), this.timeoutMs - (Date.now() - startedAt)).finally(() => {
        gaveUp = true
      })
      this.sampleClock(sentAt, out[1] ?? 0)
      if (out[0] !== 1) throw new Error('redis answered after the deadline')
    } catch (err) {
      // Not counted in Redis (the script's deadline makes sure of it): decided here instead.
      this.wentDown(err)
      for (const g of batch) {
        this.outage.giveBackLater(g.accountId, g.day, g.back.requests)
        for (const p of g.calls) {
          try {
            p.resolve(this.decideLocally(g.accountId, g.limits, p.cost, p.nowMs))
          } catch (refused) {
            p.reject(refused)
          }
        }
      }
      return
    }
    batch.forEach((g, j) => {
      const o = 2 + 6 * j // groups follow the status and Redis's time
      const used = { second: out[o] ?? 0, cu: out[o + 1] ?? 0, day: out[o + 2] ?? 0 }
      for (const p of g.calls) {
        const d = decide(g.limits, p.cost, used, p.nowMs)
        if (d.allowed) {
          used.second += p.cost.requests
          used.cu += p.cost.computeUnits
          used.day += p.cost.requests
        }
        p.resolve(d)
      }
      this.outage.sawDay(g.accountId, g.day, used.day)
      if (out[o + 3] === 1 && g.want) this.grant(g, used, out[o + 4] ?? 0, out[o + 5] ?? 0)
    })
  }

  /** Installs a granted lease; `used` is what Redis counted after the calls, the lease aside. */
  private grant(g: Group, used: Lease['used'], requests: number, computeUnits: number) {
    const want = g.want as NonNullable<Group['want']>
    const leftRequests = want.requests < 0 ? Infinity : requests
    const leftComputeUnits = want.computeUnits < 0 ? Infinity : computeUnits
    const held = this.leases.get(g.accountId)
    if (held && held.second === g.second && sameLimits(held.limits, g.limits)) {
      // A lease granted by an earlier run still holds: Redis counted its unspent part as used.
      used.second -= finite(held.leftRequests)
      used.cu -= finite(held.leftComputeUnits)
      used.day -= finite(held.leftRequests)
      held.leftRequests += leftRequests
      held.leftComputeUnits += leftComputeUnits
      held.used = used
      return
    }
    if (held) this.takeBack(held, undefined)
    this.leases.set(g.accountId, {
      accountId: g.accountId,
      second: g.second,
      day: g.day,
      limits: g.limits,
      leftRequests,
      leftComputeUnits,
      used,
    })
    this.sweepSoon()
  }

  /**
   * An idle account's lease would keep its unspent requests counted against the day: a second
   * after it ends, it is given back.
   */
  private sweepSoon() {
    if (this.sweepTimer) return
    this.sweepTimer = setTimeout(
      () => {
        this.sweepTimer = undefined
        const now = Math.floor(Date.now() / 1000)
        for (const lease of this.leases.values()) if (lease.second < now) this.takeBack(lease, undefined)
        if (this.leases.size > 0) this.sweepSoon()
      },
      1_100 - (Date.now() % 1000),
    )
    this.sweepTimer.unref()
  }

  /** Gives the unspent leases back (a stopping process leaves nothing counted), then disconnects. */
  async close() {
    clearTimeout(this.sweepTimer)
    this.sweepTimer = undefined
    clearTimeout(this.probeTimer)
    this.probeTimer = undefined
    for (const lease of [...this.leases.values()]) this.takeBack(lease, undefined)
    if (this.groups.length > 0) await this.flush().catch(() => {})
    // What was decided without Redis reaches it if it answers now; else it is lost (logged).
    if (this.outage.hasPending() && !this.reconciling) await this.reconcile()
    this.closed = true
    this.redis.disconnect()
  }
}
