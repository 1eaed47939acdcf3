import { describe, expect, it } from 'vitest'
import { newRequestId, requestIdFrom, safeRequestId } from './request-id.ts'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('request ids', () => {
  it('are version 4 UUIDs, all different, across refills of the random pool', () => {
    // 256 ids per pool: this crosses it 39 times.
    const ids = Array.from({ length: 10_000 }, () => newRequestId())
    for (const id of ids) expect(id).toMatch(UUID_V4)
    expect(new Set(ids).size).toBe(ids.length)
    // Every random hex digit takes all sixteen values somewhere: no position is stuck (a byte
    // read twice, or one left unwritten, would fix or narrow some).
    for (let at = 0; at < 36; at++) {
      if ([8, 13, 14, 18, 19, 23].includes(at)) continue // dashes, the version, the variant
      expect(new Set(ids.map((id) => id[at])).size, `position ${at}`).toBe(16)
    }
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']))
  })

  it('each is a string of its own, unchanged by the next', () => {
    const first = newRequestId()
    const copy = `${first}`
    newRequestId()
    expect(first).toBe(copy)
  })

  it("echo the client's own only when it is safe", () => {
    expect(safeRequestId('trace-7:a.b_C')).toBe('trace-7:a.b_C')
    expect(requestIdFrom('trace-7')).toBe('trace-7')
    for (const unsafe of ['', 'a'.repeat(65), 'a b', 'a\r\nx-injected: 1', 'é', ['a', 'b'], undefined, 7]) {
      expect(safeRequestId(unsafe)).toBeUndefined()
      expect(requestIdFrom(unsafe)).toMatch(UUID_V4)
    }
    expect(requestIdFrom('a'.repeat(64))).toBe('a'.repeat(64))
  })
})
