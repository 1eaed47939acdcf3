import { describe, expect, it } from 'vitest'
import type { Address } from '../types.ts'
import {
  type ChainTx,
  matchesMined,
  matchesPending,
  needsPendingBody,
  parseMinedFilter,
  parsePendingFilter,
  toChainTx,
} from './tx-filters.ts'

const A = `0x${'aa'.repeat(20)}` as Address
const B = `0x${'bb'.repeat(20)}` as Address
const C = `0x${'cc'.repeat(20)}` as Address
const tx = (from: Address, to: Address | null): ChainTx =>
  toChainTx({ hash: `0x${'11'.repeat(32)}`, from: from.toUpperCase().replace('0X', '0x'), to })!

const mined = (raw: unknown) => {
  const f = parseMinedFilter(raw)
  if (!f.ok) throw new Error(f.message)
  return f.value
}
const pending = (raw: unknown) => {
  const f = parsePendingFilter(raw)
  if (!f.ok) throw new Error(f.message)
  return f.value
}

describe('Alchemy transaction subscription filters', () => {
  it('matches mined transactions: any pair, every address of a pair, none = all', () => {
    expect(matchesMined(tx(A, B), mined({}))).toBe(true)
    expect(matchesMined(tx(A, B), mined({ addresses: [{ from: A, to: C }] }))).toBe(false)
    expect(matchesMined(tx(A, B), mined({ addresses: [{ from: A, to: C }, { to: B }] }))).toBe(true)
    expect(matchesMined(tx(A, null), mined({ addresses: [{ to: A }] }))).toBe(false)
    expect(
      matchesMined(tx(A, null), mined({ addresses: [{ from: A.toUpperCase().replace('0X', '0x') }] })),
    ).toBe(true)
  })

  it('matches a 1,000-pair filter exactly as its definition: any pair whose every named address matches', () => {
    // Few distinct addresses, so pairs of each shape (from only, to only, both) hit often.
    const pool = Array.from(
      { length: 12 },
      (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}` as Address,
    )
    let seed = 7
    const pick = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return pool[seed % pool.length] as Address
    }
    const pairs = Array.from({ length: 1000 }, (_, i) =>
      i % 3 === 0 ? { from: pick() } : i % 3 === 1 ? { to: pick() } : { from: pick(), to: pick() },
    )
    for (const size of [1, 2, 3, 10, 1000]) {
      const addresses = pairs.slice(0, size)
      const f = mined({ addresses })
      for (const from of pool)
        for (const to of [...pool, null]) {
          const expected = addresses.some(
            (a) => (!('from' in a) || a.from === from) && (!('to' in a) || (to !== null && a.to === to)),
          )
          expect(matchesMined(tx(from, to), f), `${size} pairs, ${from} -> ${to}`).toBe(expected)
        }
    }
  })

  it('matches pending transactions by from OR to, a string or a list, none = all', () => {
    expect(matchesPending(tx(A, B), pending({}))).toBe(true)
    expect(matchesPending(tx(A, B), pending({ fromAddress: C, toAddress: [C, B] }))).toBe(true)
    expect(matchesPending(tx(A, B), pending({ fromAddress: [C], toAddress: C }))).toBe(false)
    expect(matchesPending(tx(A, null), pending({ toAddress: A }))).toBe(false)
    expect(needsPendingBody(pending({ hashesOnly: true }))).toBe(false)
    expect(needsPendingBody(pending({ hashesOnly: true, fromAddress: A }))).toBe(true)
  })

  it('takes nulls as absent and refuses bad options naming the field', () => {
    expect(mined({ addresses: null, includeRemoved: null, hashesOnly: true })).toMatchObject({
      addresses: [],
      includeRemoved: false,
      hashesOnly: true,
    })
    const bad: [unknown, RegExp][] = [
      [{ addresses: [{ from: 'x' }] }, /^params\[1\]: addresses\[0\]\.from: /],
      [{ addresses: [{ from: null }] }, /addresses\[0\].*from or to/],
      [{ addresses: Array.from({ length: 1001 }, () => ({ to: A })) }, /addresses: has more than 1000/],
      [{ includeRemoved: 1 }, /includeRemoved/],
      ['nope', /params\[1\]/],
    ]
    for (const [raw, re] of bad) {
      const f = parseMinedFilter(raw)
      expect(f.ok ? '' : f.message, JSON.stringify(raw).slice(0, 60)).toMatch(re)
    }
    const tooMany = parsePendingFilter({ fromAddress: Array(600).fill(A), toAddress: Array(600).fill(B) })
    expect(tooMany.ok ? '' : tooMany.message).toMatch(/more than 1000 addresses together/)
    const badTo = parsePendingFilter({ toAddress: [A, 7] })
    expect(badTo.ok ? '' : badTo.message).toMatch(/toAddress\[1\]/)
  })
})
