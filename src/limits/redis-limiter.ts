import { Redis } from 'ioredis'
import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * Check-and-increment in one atomic script, so every instance sharing the Redis enforces one
 * combined limit. Limits of -1 mean unlimited. The script takes the calls of one event-loop
 * turn together, grouped per account and window: per group two KEYS (its second and day
 * counters) and in ARGV its limits and its calls' costs, run-length encoded (most calls of a
 * turn cost the same: 1 request and the method's CU), as a count of runs and per run
 * (calls, requests, compute units). It decides the calls
 * one after another, each seeing the counters the previous ones left (the same result as one
 * script run per call), but reads and writes each group's counters once, not once per call.
 * Returns, per group, the counters seen before its first call; the caller replays the same
 * decisions with `decide`, the function the memory limiter uses, so both refuse for the same
 * reason and the script's increments are exactly the calls `decide` allows.
 */
const SCRIPT = `
local out = {}
local a = 1
for g = 0, #KEYS / 2 - 1 do
  local sk, dk = KEYS[2 * g + 1], KEYS[2 * g + 2]
  local rps, rpd, cups = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local runs = tonumber(ARGV[a + 3])
  a = a + 4
  local sec = redis.call('HMGET', sk, 'r', 'c')
  local r = tonumber(sec[1]) or 0
  local c = tonumber(sec[2]) or 0
  local d = tonumber(redis.call('GET', dk)) or 0
  out[3 * g + 1], out[3 * g + 2], out[3 * g + 3] = r, c, d
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
  if addR > 0 or addC > 0 then
    redis.call('HINCRBY', sk, 'r', addR)
    redis.call('HINCRBY', sk, 'c', addC)
    redis.call('PEXPIRE', sk, 2000)
  end
  if addR > 0 then
    redis.call('INCRBY', dk, addR)
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

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: LimitRedis
  /** This turn's groups in arrival order, and each account's latest one. */
  private groups: Group[] = []
  private readonly latest = new Map<string, Group>()
  private scheduled = false

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

  consume(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs = Date.now(),
  ): Promise<LimitDecision> {
    const second = Math.floor(nowMs / 1000)
    let group = this.latest.get(accountId)
    if (!group || group.second !== second || !sameLimits(group.limits, limits)) {
      group = { accountId, second, day: Math.floor(nowMs / DAY_MS), limits, calls: [] }
      this.groups.push(group)
      this.latest.set(accountId, group)
    }
    const calls = group.calls
    if (!this.scheduled) {
      this.scheduled = true
      // After the turn's I/O callbacks: every request read in this turn joins one script run.
      setImmediate(() => this.flush())
    }
    return new Promise<LimitDecision>((resolve, reject) => {
      calls.push({ cost, nowMs, resolve, reject })
    })
  }

  private flush() {
    this.scheduled = false
    const groups = this.groups
    this.groups = []
    this.latest.clear()
    let batch: Group[] = []
    let size = 0
    for (const g of groups) {
      // A group larger than a batch is split: its parts run in order and see each other's counts.
      for (let i = 0; i < g.calls.length; i += MAX_BATCH) {
        const part =
          i === 0 && g.calls.length <= MAX_BATCH ? g : { ...g, calls: g.calls.slice(i, i + MAX_BATCH) }
        if (size + part.calls.length > MAX_BATCH) {
          void this.run(batch)
          batch = []
          size = 0
        }
        batch.push(part)
        size += part.calls.length
      }
    }
    if (batch.length > 0) void this.run(batch)
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
      const used = { second: out[3 * i] ?? 0, cu: out[3 * i + 1] ?? 0, day: out[3 * i + 2] ?? 0 }
      for (const p of g.calls) {
        const d = decide(g.limits, p.cost, used, p.nowMs)
        if (d.allowed) {
          used.second += p.cost.requests
          used.cu += p.cost.computeUnits
          used.day += p.cost.requests
        }
        p.resolve(d)
      }
    })
  }

  async close() {
    this.redis.disconnect()
  }
}
