import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { networkSchema } from '../server/config-schema.ts'
import { HttpUpstream } from './http-upstream.ts'
import { ManagedPool } from './managed-pool.ts'
import { MAX_COOLDOWN_MS, UpstreamState } from './upstream-state.ts'

/**
 * Circuit-breaker backoff: the cooldown grows on repeated failure up to its maximum
 * and resets only after the upstream has stayed healthy for a while. Time is an injected clock
 * (the pool's and the state's `now`), so minutes of backoff take no real time.
 */
describe('circuit breaker backoff against an upstream that fails every request', () => {
  let server: http.Server
  let url: string
  let clock = 0
  /** The (injected) clock reading at each request the upstream received. */
  const seen: number[] = []

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(clock)
      req.resume()
      res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance')
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  it('probes it after growing intervals, doubling from the base cooldown up to the maximum', async () => {
    const BASE = 1_000
    const cfg = networkSchema.parse({
      chain: 'ethereum',
      network: 'flaky',
      chainId: 31337,
      blockTimeMs: 1_000,
      requestTimeoutMs: 2_000,
      upstreams: [{ url }],
      // The scheduled round never comes within the test: rounds run when a call finds nothing.
      gateway: { healthCheckMs: 60_000, breakerFailures: 1, breakerCooldownMs: BASE },
    })
    const pool = new ManagedPool(cfg, { now: () => clock })
    try {
      // Every call finds no verified upstream and asks for a health round; the breaker decides
      // whether that round may probe. Calls every 250 ms of clock for five minutes.
      for (clock = 0; clock <= 300_000; clock += 250) {
        await expect(pool.call('eth_blockNumber', [])).rejects.toThrow(/no healthy upstream/)
      }
    } finally {
      await pool.close()
    }
    const rounds = [...new Set(seen)]
    expect(seen.length).toBe(rounds.length * 2) // eth_chainId + eth_blockNumber per probe
    const gaps = rounds.slice(1).map((t, i) => t - rounds[i]!)
    const doubling = [1, 2, 4, 8, 16].map((n) => n * BASE)
    expect(gaps.slice(0, doubling.length)).toEqual(doubling)
    expect(gaps.slice(doubling.length)).toEqual(
      Array.from({ length: gaps.length - doubling.length }, () => MAX_COOLDOWN_MS),
    )
    expect(gaps.length).toBeGreaterThanOrEqual(doubling.length + 3) // the maximum held, repeatedly
    expect(pool.statuses()[0]).toMatchObject({ breaker: 'open', healthy: false })
  })
})

describe('circuit breaker state', () => {
  const upstream = new HttpUpstream('http://127.0.0.1:9/', { label: 'upstream-0' })
  afterAll(() => upstream.close())
  const BASE = 2_000

  /** Opens `s` at `now` (one failure opens it) and returns how long it stays open. */
  const openFor = (s: UpstreamState, now: number) => {
    expect(s.recordFailure('boom', now)).toBe(true)
    return s.openUntil - now
  }

  it('keeps a flapping upstream out longer each time instead of restarting at the base', () => {
    const s = new UpstreamState(upstream, 1, 1, BASE)
    let now = 0
    const stays: number[] = []
    for (let i = 0; i < 8; i++) {
      stays.push(openFor(s, now))
      now = s.openUntil
      expect(s.probeDue(now - 1)).toBe(false)
      expect(s.probeDue(now)).toBe(true)
      expect(s.probeSucceeded(now)).toBe(true) // back for a moment…
      now += 1_000 // …and failing again a second later
    }
    expect(stays).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000])
  })

  it('starts again from the base once the upstream stayed healthy for a whole maximum cooldown', () => {
    const s = new UpstreamState(upstream, 1, 1, BASE)
    let now = 0
    for (let i = 0; i < 4; i++) {
      openFor(s, now)
      now = s.openUntil
      s.probeSucceeded(now)
    }
    // Closed at `now`; a failure one tick short of the window still counts as the same incident.
    expect(openFor(s, now + MAX_COOLDOWN_MS - 1)).toBe(30_000)
    now = s.openUntil
    s.probeSucceeded(now)
    expect(openFor(s, now + MAX_COOLDOWN_MS)).toBe(BASE)
  })

  it('a failed trial after the cooldown re-opens it; failures during the cooldown do not extend it', () => {
    const s = new UpstreamState(upstream, 1, 3, BASE)
    expect(s.recordFailure('a', 0)).toBe(false)
    expect(s.recordFailure('b', 0)).toBe(false)
    expect(s.recordFailure('c', 0)).toBe(true)
    expect(s.openUntil).toBe(BASE)
    expect(s.recordFailure('d', BASE - 1)).toBe(false)
    expect(s.openUntil).toBe(BASE)
    expect(s.recordFailure('e', BASE)).toBe(true)
    expect(s.openUntil).toBe(BASE + 2 * BASE)
  })
})
