import { describe, expect, it } from 'vitest'
import { MemoryResultCache } from './cache-store.ts'

describe('memory result cache', () => {
  it('stays within its byte budget, evicting the least recently used entries', () => {
    const cache = new MemoryResultCache(1_000)
    const value = 'x'.repeat(98)
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, value) // 100 bytes each with a 2-byte key
    expect(cache.usedBytes).toBe(1_000)
    expect(cache.get('k0')).toBe(value) // now the most recently used
    cache.set('k10', `${value}yy`) // 103 bytes: two of the oldest must go
    expect(cache.usedBytes).toBeLessThanOrEqual(1_000)
    expect(cache.get('k1')).toBeUndefined()
    expect(cache.get('k2')).toBeUndefined()
    expect(cache.get('k0')).toBe(value)
    expect(cache.get('k10')).toBe(`${value}yy`)
  })

  it('does not store an entry too large for a fair share of the budget', () => {
    const cache = new MemoryResultCache(1_000)
    cache.set('big', 'x'.repeat(500))
    expect(cache.get('big')).toBeUndefined()
    expect(cache.usedBytes).toBe(0)
  })
})
