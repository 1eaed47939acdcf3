import { describe, expect, it } from 'vitest'
import type { Address, Hash } from '../types.ts'
import { matchesFilter, parseSubscribeParams } from './routes.ts'

const TOPIC = `0x${'ab'.repeat(32)}` as Hash
const OTHER = `0x${'cd'.repeat(32)}` as Hash
const log = { address: `0x${'11'.repeat(20)}` as Address, topics: [TOPIC, OTHER], wire: {} }

describe('logs subscription filter', () => {
  it('treats an empty alternative list as a wildcard, as geth does', () => {
    const parsed = parseSubscribeParams(['logs', { topics: [[], [OTHER]] }])
    if (!parsed.ok || parsed.value.kind !== 'logs') throw new Error('filter refused')
    expect(parsed.value.filter.topics).toEqual([null, [OTHER]])
    expect(matchesFilter(log, parsed.value.filter)).toBe(true)
  })

  it('still rejects a log that misses a non-empty position', () => {
    const parsed = parseSubscribeParams(['logs', { topics: [[OTHER]] }])
    if (!parsed.ok || parsed.value.kind !== 'logs') throw new Error('filter refused')
    expect(matchesFilter(log, parsed.value.filter)).toBe(false)
  })

  it('matches one address of many', () => {
    const many = Array.from({ length: 500 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`)
    const parsed = parseSubscribeParams(['logs', { address: [...many, log.address] }])
    if (!parsed.ok || parsed.value.kind !== 'logs') throw new Error('filter refused')
    expect(matchesFilter(log, parsed.value.filter)).toBe(true)
    expect(matchesFilter({ ...log, address: `0x${'22'.repeat(20)}` as Address }, parsed.value.filter)).toBe(
      false,
    )
  })

  it('refuses parameters after the filter', () => {
    const parsed = parseSubscribeParams(['logs', {}, true])
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.message).toMatch(/^params\[2\]/)
  })
})
