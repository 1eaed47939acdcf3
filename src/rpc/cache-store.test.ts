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

  it('holds its budget through heavy churn and keeps the most recent entries', () => {
    const cache = new MemoryResultCache(10_000)
    for (let i = 0; i < 100_000; i++) cache.set(`key-${i}`, `"0x${i.toString(16)}"`)
    expect(cache.usedBytes).toBeLessThanOrEqual(10_000)
    expect(cache.usedBytes).toBeGreaterThan(9_900)
    expect(cache.get('key-99999')).toBe('"0x1869f"')
    expect(cache.get('key-0')).toBeUndefined()
  })

  it('an entry too large to store leaves what was cached under its key', () => {
    const cache = new MemoryResultCache(1_000)
    cache.set('k', 'small')
    cache.set('k', 'x'.repeat(500))
    expect(cache.get('k')).toBe('small')
  })
})
