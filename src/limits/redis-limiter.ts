import { Redis } from 'ioredis'
import { type Lease, leaseWanted, spend, unspent } from './lease.ts'
import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * Check-and-increment in one atomic script, so every instance sharing the Redis enforces one
 * combined limit. Limits of -1 mean unlimited. The script takes the calls of one event-loop
 * turn together, grouped per account and window: per group two KEYS (its second and day
 * counters) and in ARGV its limits, what it gives back of an earlier lease (requests, compute
 * units), the lease it asks for (requests, compute units: 0 0 for none, -1 for a dimension
 * the plan does not limit) and its calls' costs, run-length encoded (most calls of a turn cost
 * the same: 1 request and the method's CU), as a count of runs and per run (calls, requests,
 * compute units). It decides the calls one after another, each seeing the counters the
 * previous ones left (the same result as one script run per call), then reserves the lease
 * from what remains (lease.ts), reading and writing each group's counters once.
 * Returns, per group, the counters seen before its first call (after the give-back), whether a
 * lease was granted and its size; the caller replays the same decisions with `decide`, the
 * function the memory limiter uses, so both refuse for the same reason and the script's
 * increments are exactly the calls `decide` allows.
 */
const SCRIPT = `
local out = {}
local a = 1
for g = 0, #KEYS / 2 - 1 do
  local sk, dk = KEYS[2 * g + 1], KEYS[2 * g + 2]
  local rps, rpd, cups = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local backR, backC = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local wantR, wantC = tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  local runs = tonumber(ARGV[a + 7])
  a = a + 8
  local sec = redis.call('HMGET', sk, 'r', 'c')
  local r = (tonumber(sec[1]) or 0) - backR
  local c = (tonumber(sec[2]) or 0) - backC
  local d = (tonumber(redis.call('GET', dk)) or 0) - backR
  local addR, addC = 0, 0
  for _ = 1, runs do
    local n, req, cu = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    a = a + 3
    for _ = 1, n do
      local ok = 1
      if cups >= 0 and cu > cups then ok = 0 end
      if rps >= 0 and r + addR + req > rps then ok = 0 end
      if rpd >= 0 and d + addR + req > rpd then ok = 0 end
      if cups >= 0 and c + addC + cu > cups then ok = 0 end
      if ok == 1 then
        addR = addR + req
        addC = addC + cu
      end
    end
  end
  local leased, gR, gC = 0, 0, 0
  if wantR ~= 0 and wantC ~= 0 then
    leased = 1
    if wantR > 0 then
      gR = wantR
      if rps >= 0 then gR = math.min(gR, rps - r - addR) end
      if rpd >= 0 then gR = math.min(gR, rpd - d - addR) end
      if gR < 1 then leased = 0 end
    end
    if wantC > 0 then
      gC = wantC
      if cups >= 0 then gC = math.min(gC, cups - c - addC) end
      if gC < 1 then leased = 0 end
    end
    if leased == 0 then gR, gC = 0, 0 end
  end
  out[6 * g + 1], out[6 * g + 2], out[6 * g + 3] = r, c, d
  out[6 * g + 4], out[6 * g + 5], out[6 * g + 6] = leased, gR, gC
  local dR, dC = addR + gR - backR, addC + gC - backC
  if dR ~= 0 or dC ~= 0 then
    redis.call('HINCRBY', sk, 'r', dR)
    redis.call('HINCRBY', sk, 'c', dC)
    redis.call('PEXPIRE', sk, 2000)
  end
  if dR ~= 0 then
    redis.call('INCRBY', dk, dR)
    redis.call('PEXPIRE', dk, 90000000)
  end
end
return out
`

type LimitRedis = Redis & {
  /** ioredis flattens array arguments one level: numKeys, ...keys, ...args. */
  halyardLimits(numKeys: number, keys: string[], args: number[]): Promise<number[]>
}

interface Pending {
  cost: LimitCost
  nowMs: number
  resolve(d: LimitDecision): void
  reject(err: unknown): void
}

/** One account's calls in one second (and day) with one set of limits, within a flush. */
interface Group {
  accountId: string
  second: number
  day: number
  limits: PlanLimits
  calls: Pending[]
  /** Unspent lease of this account and second, subtracted before the calls are decided. */
  back: { requests: number; computeUnits: number }
  /** The lease to reserve after the calls (lease.ts), if any. */
  want: { requests: number; computeUnits: number } | undefined
}

/** Calls per script run: bounds the script's time inside Redis (it blocks other clients). */
const MAX_BATCH = 256
/**
 * How long a script run may wait for Redis (connected or not) before its calls are refused
 * with an error: a Redis that accepts connections and never answers must not hang requests.
 */
const COMMAND_TIMEOUT_MS = 2_000

const sameLimits = (a: PlanLimits, b: PlanLimits) =>
  a === b ||
  (a.requestsPerSecond === b.requestsPerSecond &&
    a.requestsPerDay === b.requestsPerDay &&
    a.computeUnitsPerSecond === b.computeUnitsPerSecond)

const finite = (n: number) => (Number.isFinite(n) ? n : 0)

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: LimitRedis
  /** This turn's groups in arrival order, and each account's latest one. */
  private groups: Group[] = []
  private readonly latest = new Map<string, Group>()
  private scheduled = false
  /** Each account's lease (lease.ts): calls it covers are decided here, with no round trip. */
  private readonly leases = new Map<string, Lease>()
  private sweepTimer: NodeJS.Timeout | undefined

  constructor(
    url: string,
    private readonly prefix = 'halyard:rl',
    commandTimeoutMs = COMMAND_TIMEOUT_MS,
  ) {
    // No auto-pipelining: the limiter already sends one command per turn, and ioredis would
    // wrap each in a Pipeline of its own.
    const redis = new Redis(url, {
      maxRetriesPerRequest: 2,
      enableAutoPipelining: false,
      lazyConnect: false,
      commandTimeout: commandTimeoutMs,
    })
    redis.defineCommand('halyardLimits', { lua: SCRIPT })
    // Connection errors surface on the command that needs Redis; don't crash on the event.
    redis.on('error', () => {})
    this.redis = redis as LimitRedis
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
    const quick = this.tryConsumeSync(accountId, limits, cost, nowMs)
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
    const runs: Promise<void>[] = []
    let batch: Group[] = []
    let size = 0
    for (const g of groups) {
      // A group larger than a batch is split: its parts run in order and see each other's
      // counts; the first part gives back, the last asks for the lease.
      const n = Math.max(1, Math.ceil(g.calls.length / MAX_BATCH))
      for (let i = 0; i < n; i++) {
        const part =
          n === 1
            ? g
            : {
                ...g,
                calls: g.calls.slice(i * MAX_BATCH, (i + 1) * MAX_BATCH),
                back: i === 0 ? g.back : { requests: 0, computeUnits: 0 },
                want: i === n - 1 ? g.want : undefined,
              }
        if (size > 0 && size + part.calls.length > MAX_BATCH) {
          runs.push(this.run(batch))
          batch = []
          size = 0
        }
        batch.push(part)
        size += part.calls.length
      }
    }
    if (batch.length > 0) runs.push(this.run(batch))
    return Promise.all(runs)
  }

  private async run(batch: readonly Group[]) {
    const keys: string[] = []
    const args: number[] = []
    for (const g of batch) {
      const { limits } = g
      keys.push(`${this.prefix}:${g.accountId}:s:${g.second}`, `${this.prefix}:${g.accountId}:d:${g.day}`)
      args.push(
        limits.requestsPerSecond ?? -1,
        limits.requestsPerDay ?? -1,
        limits.computeUnitsPerSecond ?? -1,
        g.back.requests,
        g.back.computeUnits,
        g.want?.requests ?? 0,
        g.want?.computeUnits ?? 0,
        0,
      )
      const runsAt = args.length - 1
      let runs = 0
      let run = -1 // where in args the current run's call count is
      for (const { cost } of g.calls) {
        if (run >= 0 && args[run + 1] === cost.requests && args[run + 2] === cost.computeUnits) {
          args[run] = (args[run] ?? 0) + 1
        } else {
          run = args.length
          args.push(1, cost.requests, cost.computeUnits)
          runs++
        }
      }
      args[runsAt] = runs
    }
    let out: number[]
    try {
      out = await this.redis.halyardLimits(keys.length, keys, args)
    } catch (err) {
      for (const g of batch) for (const p of g.calls) p.reject(err)
      return
    }
    batch.forEach((g, i) => {
      const used = { second: out[6 * i] ?? 0, cu: out[6 * i + 1] ?? 0, day: out[6 * i + 2] ?? 0 }
      for (const p of g.calls) {
        const d = decide(g.limits, p.cost, used, p.nowMs)
        if (d.allowed) {
          used.second += p.cost.requests
          used.cu += p.cost.computeUnits
          used.day += p.cost.requests
        }
        p.resolve(d)
      }
      if (out[6 * i + 3] === 1 && g.want) this.grant(g, used, out[6 * i + 4] ?? 0, out[6 * i + 5] ?? 0)
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
    for (const lease of [...this.leases.values()]) this.takeBack(lease, undefined)
    if (this.groups.length > 0) await this.flush().catch(() => {})
    this.redis.disconnect()
  }
}
