import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { intArray } from './array-literal.ts'
import type { Storage } from './database.ts'

/** Integer array literals read back as the integers given, uint256 included; non-integers refused. */
describe('integer array literals', () => {
  let storage: Storage
  beforeAll(async () => {
    storage = await openTestPGlite()
  })
  afterAll(async () => {
    await storage.close()
  })

  it('reads back each value, the largest uint256 and an empty array too', async () => {
    const max = 2n ** 256n - 1n
    const { rows } = await sql<{ v: string }>`
      select v::text as v from unnest(${intArray([0, 7, 2n ** 64n, max])}::numeric[]) as u(v)`.execute(
      storage.db,
    )
    expect(rows.map((r) => r.v)).toEqual(['0', '7', (2n ** 64n).toString(), max.toString()])
    const empty = await sql<{ n: number }>`
      select cardinality(${intArray([])}::bigint[]) as n`.execute(storage.db)
    expect(empty.rows[0]?.n).toBe(0)
  })

  it('refuses a number that is not a safe integer', () => {
    expect(() => intArray([1.5])).toThrow(/not an integer/)
    expect(() => intArray([Number.NaN])).toThrow(/not an integer/)
  })
})
