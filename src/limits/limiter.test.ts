import { randomBytes } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { describeEach, type ServiceCase, serviceUrl } from '../../test/helpers/services.ts'
import type { LimitDecision, RateLimiter } from './limiter.ts'
import { MemoryRateLimiter } from './memory-limiter.ts'
import { PLANS } from './plans.ts'
import { RedisRateLimiter } from './redis-limiter.ts'
import { LIMITS_SCRIPT } from './redis-scripts.ts'

interface Impl extends ServiceCase {
  make(): RateLimiter
}

const impls: Impl[] = [
  { name: 'memory', make: () => new MemoryRateLimiter() },
  {
    name: 'redis',
    needs: ['REDIS_URL'],
    make: () =>
      new RedisRateLimiter(serviceUrl('REDIS_URL'), `halyard:test:${randomBytes(6).toString('hex')}`),
  },
]

// A fixed clock in the middle of a second and of a UTC day keeps the windows deterministic.
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) + 250
const one = { requests: 1, computeUnits: 1 }

describeEach(impls, 'rate limiter contract: $name', (impl) => {
  const open: RateLimiter[] = []
  const make = () => {
    const l = impl.make()
    open.push(l)
    return l
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()))
  })

  it('allows the plan rate and refuses the next request in the same second', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) {
      const d = await l.consume('acct', PLANS.free, one, T0 + i)
      expect(d.allowed).toBe(true)
      expect(d.limit).toBe(10)
      expect(d.remaining).toBe(9 - i)
      expect(d.resetAt).toBe(Math.floor(T0 / 1000) + 1)
    }
    const refused = await l.consume('acct', PLANS.free, one, T0 + 20)
    expect(refused.allowed).toBe(false)
    expect(refused.exceeded).toBe('requests per second')
    expect(refused.remaining).toBe(0)
    expect(refused.retryAfterSeconds).toBe(1)
  })

  it('opens a new window in the next second', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) await l.consume('acct', PLANS.free, one, T0)
    expect((await l.consume('acct', PLANS.free, one, T0)).allowed).toBe(false)
    expect((await l.consume('acct', PLANS.free, one, T0 + 1000)).allowed).toBe(true)
  })

  it('keeps accounts apart', async () => {
    const l = make()
    for (let i = 0; i < 10; i++) await l.consume('a', PLANS.free, one, T0)
    expect((await l.consume('a', PLANS.free, one, T0)).allowed).toBe(false)
    expect((await l.consume('b', PLANS.free, one, T0)).allowed).toBe(true)
  })

  it('refuses compute units over the per-second budget and charges nothing for a refusal', async () => {
    const l = make()
    expect((await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 150 }, T0)).allowed).toBe(true)
    const over = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 60 }, T0)
    expect(over.allowed).toBe(false)
    expect(over.exceeded).toBe('compute units per second')
    expect(over.neverFits).toBeFalsy()
    // The refused 60 CU were not counted: 50 still fit, and the request count did not move.
    const fits = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 50 }, T0)
    expect(fits.allowed).toBe(true)
    expect(fits.remaining).toBe(8)
  })

  it('marks a cost larger than the whole per-second budget as never fitting', async () => {
    const l = make()
    const d = await l.consume('acct', PLANS.free, { requests: 1, computeUnits: 201 }, T0)
    expect(d.allowed).toBe(false)
    expect(d.neverFits).toBe(true)
    expect(d.exceeded).toBe('compute units per second')
  })

  it('enforces the daily request limit with a Retry-After until the UTC day ends', async () => {
    const l = make()
    const limits = { requestsPerSecond: null, requestsPerDay: 3, computeUnitsPerSecond: null }
    for (let i = 0; i < 3; i++)
      expect((await l.consume('acct', limits, one, T0 + i * 1000)).allowed).toBe(true)
    const d = await l.consume('acct', limits, one, T0 + 5000)
    expect(d.allowed).toBe(false)
    expect(d.exceeded).toBe('requests per day')
    expect(d.retryAfterSeconds).toBe(12 * 3600 - 5)
  })

  it('never limits an unlimited plan', async () => {
    const l = make()
    for (let i = 0; i < 50; i++) {
      const d = await l.consume('acct', PLANS.enterprise, { requests: 1, computeUnits: 10_000 }, T0)
      expect(d.allowed).toBe(true)
      expect(d.limit).toBeNull()
    }
  })

  it('is atomic under concurrency: exactly the limit is admitted', async () => {
    const l = make()
    const results = await Promise.all(
      Array.from({ length: 50 }, () => l.consume('acct', PLANS.free, one, T0)),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(10)
  })

  it('decides the calls of one turn in order, as one call at a time would', async () => {
    // Interleaved accounts, costs that overflow the CU budget mid-way (refused, then a smaller
    // one fits), a plan change and the next second: all in one turn, then one at a time.
    const growthish = { requestsPerSecond: 6, requestsPerDay: 9, computeUnitsPerSecond: 100 }
    const seq: [string, typeof growthish, number, number][] = [
      ['a', growthish, 40, T0],
      ['b', PLANS.free, 150, T0],
      ['a', growthish, 50, T0 + 1],
      ['a', growthish, 30, T0 + 2],
      ['b', PLANS.free, 60, T0 + 3],
      ['a', growthish, 10, T0 + 4],
      ['a', PLANS.free, 5, T0 + 5],
      ['b', PLANS.free, 50, T0 + 6],
      ['a', growthish, 90, T0 + 1000],
      ['a', growthish, 1, T0 + 1001],
      ['a', growthish, 1, T0 + 1002],
      ['a', growthish, 1, T0 + 1003],
      ['a', growthish, 1, T0 + 1004],
      ['a', growthish, 1, T0 + 1005],
    ]
    const view = (d: LimitDecision) => [d.allowed, d.exceeded ?? null, d.remaining, d.resetAt]
    const together = make()
    const turn = await Promise.all(
      seq.map(([acct, limits, cu, at]) =>
        together.consume(acct, limits, { requests: 1, computeUnits: cu }, at),
      ),
    )
    const alone = make()
    const oneByOne = []
    for (const [acct, limits, cu, at] of seq)
      oneByOne.push(await alone.consume(acct, limits, { requests: 1, computeUnits: cu }, at))
    expect(turn.map(view)).toEqual(oneByOne.map(view))
    // What the turn left in the counters: later calls see the same on both.
    for (const [acct, limits, cu, at] of [
      ['a', growthish, 1, T0 + 1006],
      ['b', PLANS.free, 1, T0 + 7],
    ] as const) {
      const cost = { requests: 1, computeUnits: cu }
      expect(view(await together.consume(acct, limits, cost, at))).toEqual(
        view(await alone.consume(acct, limits, cost, at)),
      )
    }
    // The CU budgets refuse the fourth and fifth calls, a's day limit (9) the last one.
    const refused = oneByOne.flatMap((d, i) => (d.allowed ? [] : [`${i}: ${d.exceeded}`]))
    expect(refused).toEqual([
      '3: compute units per second',
      '4: compute units per second',
      '13: requests per day',
    ])
  })

  it('admits exactly the limit from a turn larger than one script run', async () => {
    const l = make()
    const limits = { requestsPerSecond: 500, requestsPerDay: null, computeUnitsPerSecond: null }
    const results = await Promise.all(Array.from({ length: 700 }, () => l.consume('acct', limits, one, T0)))
    const allowed = results.filter((r) => r.allowed)
    expect(allowed).toHaveLength(500)
    expect(new Set(allowed.map((r) => r.remaining)).size).toBe(500)
    expect(results.slice(500).every((r) => !r.allowed && r.exceeded === 'requests per second')).toBe(true)
  })

  if (impl.name === 'redis') {
    it('two limiters on one Redis share one limit', async () => {
      const prefix = `halyard:test:${randomBytes(6).toString('hex')}`
      const a = new RedisRateLimiter(serviceUrl('REDIS_URL'), prefix)
      const b = new RedisRateLimiter(serviceUrl('REDIS_URL'), prefix)
      open.push(a, b)
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).consume('acct', PLANS.free, one, T0)),
      )
      expect(results.filter((r) => r.allowed)).toHaveLength(10)
    })
  }
})

it('answers without Redis, not a hang, when Redis accepts the connection and never answers', async () => {
  const sockets: Socket[] = []
  let ending = false
  // Reads nothing it is sent, answers nothing. resume() lets it notice a client closing, and a
  // reconnect arriving once the test ends is cut at once, so closing the server cannot wait on it.
  const silent = createServer((socket) => {
    socket.resume()
    if (ending) socket.destroy()
    else sockets.push(socket)
  })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const { port } = silent.address() as { port: number }
  const url = `redis://127.0.0.1:${port}`
  // Fails closed: the JSON error body as a 503 with Retry-After.
  const closed = new RedisRateLimiter(url, 'halyard:test:silent', { timeoutMs: 100, fallback: 'closed' })
  // Fails open (the default): the local allowance decides, within the plan's limits.
  const local = new RedisRateLimiter(url, 'halyard:test:silent', { timeoutMs: 100 })
  try {
    await expect(closed.consume('acct', PLANS.free, one, T0)).rejects.toMatchObject({
      code: 'service_unavailable',
      status: 503,
      headers: { 'retry-after': '1' },
    })
    const results = await Promise.all(
      Array.from({ length: 11 }, () => local.consume('acct', PLANS.free, one, T0)),
    )
    expect(results.filter((r) => r.allowed)).toHaveLength(10)
    expect(results[10]).toMatchObject({ allowed: false, exceeded: 'requests per second' })
    expect(sockets.length).toBeGreaterThan(0)
  } finally {
    await closed.close()
    await local.close()
    ending = true
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => silent.close(resolve))
  }
})

/**
 * A minimal RESP server: HELLO is refused (the client falls back to RESP2), INFO reports a
 * loaded server, scripts are answered by `script` (with a delay of its choosing).
 */
const INFO = '# Server\r\nloading:0\r\n'
const fakeRedis = async (script: (lua: string) => { delayMs: number; reply: string }) => {
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    let buf = ''
    socket.on('data', (chunk) => {
      buf += chunk.toString('latin1')
      for (;;) {
        // One command: *N\r\n then N bulk strings ($len\r\n...\r\n).
        const lines: string[] = []
        const head = buf.indexOf('\r\n')
        if (!buf.startsWith('*') || head < 0) return
        const n = Number(buf.slice(1, head))
        let at = head + 2
        for (let i = 0; i < n; i++) {
          const eol = buf.indexOf('\r\n', at)
          if (eol < 0) return
          const len = Number(buf.slice(at + 1, eol))
          if (buf.length < eol + 2 + len + 2) return
          lines.push(buf.slice(eol + 2, eol + 2 + len))
          at = eol + 2 + len + 2
        }
        buf = buf.slice(at)
        const name = (lines[0] ?? '').toLowerCase()
        if (name === 'hello') socket.write("-ERR unknown command 'HELLO'\r\n")
        else if (name === 'info') socket.write(`$${INFO.length}\r\n${INFO}\r\n`)
        else if (name === 'eval' || name === 'evalsha') {
          const { delayMs, reply } = script(lines[1] ?? '')
          setTimeout(() => socket.writable && socket.write(reply), delayMs)
        } else socket.write('+OK\r\n')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `redis://127.0.0.1:${port}`,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

it('decides without Redis at the timeout when a script is answered NOSCRIPT and sent again', async () => {
  const timeoutMs = 200
  // Each script is answered just before the timeout: the first time NOSCRIPT (the client sends
  // it again), then with a reply that admits the call. Together: almost twice the timeout.
  let limitRuns = 0
  const fake = await fakeRedis((lua) => {
    const now = `:${Date.now()}\r\n`
    // Other scripts (the recovery bookkeeping) are answered at once.
    if (lua !== LIMITS_SCRIPT) return { delayMs: 0, reply: `*2\r\n:1\r\n${now}` }
    const reply =
      limitRuns++ === 0
        ? '-NOSCRIPT No matching script.\r\n'
        : `*8\r\n:1\r\n${now}:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n`
    return { delayMs: timeoutMs * 0.9, reply }
  })
  const closed = new RedisRateLimiter(fake.url, 'halyard:test:noscript', { timeoutMs, fallback: 'closed' })
  try {
    await closed.ready()
    // The promised wait is the timeout: the 503 comes then, not Redis's late admission.
    await expect(closed.consume('acct', PLANS.free, one, T0)).rejects.toMatchObject({ status: 503 })
    expect(limitRuns).toBeGreaterThan(0)
  } finally {
    await closed.close()
    await fake.close()
  }
})
