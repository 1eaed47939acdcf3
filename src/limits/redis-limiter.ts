import { Redis } from 'ioredis'
import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * Check-and-increment in one atomic script, so every instance sharing the Redis enforces one
 * combined limit. Limits of -1 mean unlimited. The script takes the calls of one event-loop
 * turn together (KEYS and ARGV in groups of 2 and 5) and decides them one after another, each
 * seeing the counters the previous ones left: the same result as one script run per call, for
 * one run per turn. Returns, per call, the counters seen before its increment and whether it
 * was applied; the decision itself is computed by `decide`, the same function the memory
 * limiter uses, so both refuse for the same reason.
 */
const SCRIPT = `
local out = {}
for i = 0, #KEYS / 2 - 1 do
  local sk, dk = KEYS[2 * i + 1], KEYS[2 * i + 2]
  local a = 5 * i
  local sec = redis.call('HMGET', sk, 'r', 'c')
  local r = tonumber(sec[1]) or 0
  local c = tonumber(sec[2]) or 0
  local d = tonumber(redis.call('GET', dk)) or 0
  local req, cu = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local rps, rpd, cups = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local ok = 1
  if cups >= 0 and cu > cups then ok = 0 end
  if rps >= 0 and r + req > rps then ok = 0 end
  if rpd >= 0 and d + req > rpd then ok = 0 end
  if cups >= 0 and c + cu > cups then ok = 0 end
  if ok == 1 then
    if req > 0 or cu > 0 then
      redis.call('HINCRBY', sk, 'r', req)
      redis.call('HINCRBY', sk, 'c', cu)
      redis.call('PEXPIRE', sk, 2000)
    end
    if req > 0 then
      redis.call('INCRBY', dk, req)
      redis.call('PEXPIRE', dk, 90000000)
    end
  end
  out[4 * i + 1], out[4 * i + 2], out[4 * i + 3], out[4 * i + 4] = r, c, d, ok
end
return out
`

type LimitRedis = Redis & {
  halyardLimits(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>
}

interface Pending {
  keys: [string, string]
  args: number[]
  limits: PlanLimits
  cost: LimitCost
  nowMs: number
  resolve(d: LimitDecision): void
  reject(err: unknown): void
}

/** Calls per script run: bounds the script's time inside Redis (it blocks other clients). */
const MAX_BATCH = 256

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: LimitRedis
  private pending: Pending[] = []
  private scheduled = false

  constructor(
    url: string,
    private readonly prefix = 'halyard:rl',
  ) {
    const redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true, lazyConnect: false })
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
    const day = Math.floor(nowMs / DAY_MS)
    return new Promise<LimitDecision>((resolve, reject) => {
      this.pending.push({
        keys: [`${this.prefix}:${accountId}:s:${second}`, `${this.prefix}:${accountId}:d:${day}`],
        args: [
          cost.requests,
          cost.computeUnits,
          limits.requestsPerSecond ?? -1,
          limits.requestsPerDay ?? -1,
          limits.computeUnitsPerSecond ?? -1,
        ],
        limits,
        cost,
        nowMs,
        resolve,
        reject,
      })
      if (!this.scheduled) {
        this.scheduled = true
        // After the turn's I/O callbacks: every request read in this turn joins one script run.
        setImmediate(() => this.flush())
      }
    })
  }

  private flush() {
    this.scheduled = false
    const all = this.pending
    this.pending = []
    for (let i = 0; i < all.length; i += MAX_BATCH) void this.run(all.slice(i, i + MAX_BATCH))
  }

  private async run(batch: Pending[]) {
    const keys: string[] = []
    const args: number[] = []
    for (const p of batch) {
      keys.push(...p.keys)
      args.push(...p.args)
    }
    let out: number[]
    try {
      out = await this.redis.halyardLimits(keys.length, ...keys, ...args)
    } catch (err) {
      for (const p of batch) p.reject(err)
      return
    }
    batch.forEach((p, i) => {
      const [r = 0, c = 0, d = 0] = out.slice(4 * i, 4 * i + 3)
      p.resolve(decide(p.limits, p.cost, { second: r, cu: c, day: d }, p.nowMs))
    })
  }

  async close() {
    this.redis.disconnect()
  }
}
