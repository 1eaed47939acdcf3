import { Redis } from 'ioredis'
import { DAY_MS, decide, type LimitCost, type LimitDecision, type RateLimiter } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/**
 * Check-and-increment in one atomic script, so every instance sharing the Redis enforces one
 * combined limit. Limits of -1 mean unlimited. Returns the counters seen before the
 * increment and whether it was applied; the decision itself is computed by `decide`, the
 * same function the memory limiter uses, so both refuse for the same reason.
 */
const SCRIPT = `
local sec = redis.call('HMGET', KEYS[1], 'r', 'c')
local r = tonumber(sec[1]) or 0
local c = tonumber(sec[2]) or 0
local d = tonumber(redis.call('GET', KEYS[2])) or 0
local req, cu = tonumber(ARGV[1]), tonumber(ARGV[2])
local rps, rpd, cups = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ok = 1
if cups >= 0 and cu > cups then ok = 0 end
if rps >= 0 and r + req > rps then ok = 0 end
if rpd >= 0 and d + req > rpd then ok = 0 end
if cups >= 0 and c + cu > cups then ok = 0 end
if ok == 1 then
  if req > 0 or cu > 0 then
    redis.call('HINCRBY', KEYS[1], 'r', req)
    redis.call('HINCRBY', KEYS[1], 'c', cu)
    redis.call('PEXPIRE', KEYS[1], 2000)
  end
  if req > 0 then
    redis.call('INCRBY', KEYS[2], req)
    redis.call('PEXPIRE', KEYS[2], 90000000)
  end
end
return {r, c, d, ok}
`

type LimitRedis = Redis & {
  halyardLimit(secKey: string, dayKey: string, ...args: (string | number)[]): Promise<number[]>
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: LimitRedis

  constructor(
    url: string,
    private readonly prefix = 'halyard:rl',
  ) {
    const redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true, lazyConnect: false })
    redis.defineCommand('halyardLimit', { numberOfKeys: 2, lua: SCRIPT })
    // Connection errors surface on the command that needs Redis; don't crash on the event.
    redis.on('error', () => {})
    this.redis = redis as LimitRedis
  }

  async consume(
    accountId: string,
    limits: PlanLimits,
    cost: LimitCost,
    nowMs = Date.now(),
  ): Promise<LimitDecision> {
    const second = Math.floor(nowMs / 1000)
    const day = Math.floor(nowMs / DAY_MS)
    const [r = 0, c = 0, d = 0] = await this.redis.halyardLimit(
      `${this.prefix}:${accountId}:s:${second}`,
      `${this.prefix}:${accountId}:d:${day}`,
      cost.requests,
      cost.computeUnits,
      limits.requestsPerSecond ?? -1,
      limits.requestsPerDay ?? -1,
      limits.computeUnitsPerSecond ?? -1,
    )
    return decide(limits, cost, { second: r, cu: c, day: d }, nowMs)
  }

  async close() {
    this.redis.disconnect()
  }
}
