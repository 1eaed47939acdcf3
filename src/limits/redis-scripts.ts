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
 * ARGV[1] is a deadline on Redis's clock (ms): a run that reaches Redis after it changes
 * nothing and returns {-1, now}. The caller stops waiting at that deadline and decides the
 * calls without Redis, so a run stuck in a frozen Redis's socket buffer, or resent after a
 * reconnect, must not count them a second time (docs/dependency-failures.md).
 * Returns 1 and Redis's time, then per group the counters seen before its first call (after the give-back), whether a
 * lease was granted and its size; the caller replays the same decisions with `decide`, the
 * function the memory limiter uses, so both refuse for the same reason and the script's
 * increments are exactly the calls `decide` allows.
 */
export const LIMITS_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[1]) then return {-1, now} end
local out = {1, now}
local a = 2
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
  out[6 * g + 3], out[6 * g + 4], out[6 * g + 5] = r, c, d
  out[6 * g + 6], out[6 * g + 7], out[6 * g + 8] = leased, gR, gC
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

/**
 * What a process decided without Redis, told to Redis once it answers again; also the probe
 * that tells the limiter Redis is back. KEYS[1] is a marker that lives as long as Redis's data:
 * when it is missing, Redis lost its data (restarted without persistence) and with it the
 * unspent leases, so their give-backs are dropped instead of subtracted from a fresh count.
 * Then per day counter: KEYS[i + 1], ARGV[2i] requests admitted locally (added) and ARGV[2i + 1]
 * requests of unspent leases (subtracted, never below zero). ARGV[1] is a deadline as in
 * LIMITS_SCRIPT. Returns {1 or -1, Redis's time in ms}.
 */
export const RECONCILE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[1]) then return {-1, now} end
local kept = redis.call('EXISTS', KEYS[1])
for i = 2, #KEYS do
  local add, back = tonumber(ARGV[2 * i - 2]), tonumber(ARGV[2 * i - 1])
  if kept == 0 then back = 0 end
  local v = tonumber(redis.call('GET', KEYS[i])) or 0
  local nv = math.max(0, v + add - back)
  if nv ~= v then
    redis.call('SET', KEYS[i], nv, 'PX', 90000000)
  end
end
redis.call('SET', KEYS[1], '1')
return {1, now}
`
