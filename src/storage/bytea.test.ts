import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import type { Hex } from '../types.ts'
import { packed, unpack } from './bytea.ts'
import type { Storage } from './database.ts'

/**
 * A packed column (one bytea of fixed-size values end to end) cut back by row number gives the
 * values the hex texts name, nulls where they were null, and refuses what is not hex of the size.
 */
describe('packed bytea columns', () => {
  let storage: Storage
  beforeAll(async () => {
    storage = await openTestPGlite()
  })
  afterAll(async () => {
    await storage.close()
  })

  it('cuts each row its own value, in order, with nulls kept', async () => {
    const values: (Hex | null)[] = [
      '0x00000000000000000000000000000000000000aa',
      null,
      `0x${'Ab'.repeat(20)}`,
    ]
    const p = packed(values, 20)
    expect(p.nulls).toEqual([2])
    const { rows } = await sql<{ i: string; h: string | null }>`
      select u.i::text as i, encode(${unpack(p, 20, sql.ref('u.i'))}, 'hex') as h
      from unnest(${[1, 2, 3]}::integer[]) with ordinality as u(n, i) order by u.i`.execute(storage.db)
    expect(rows.map((r) => r.h)).toEqual(['00000000000000000000000000000000000000aa', null, 'ab'.repeat(20)])
  })

  it('refuses values of another size, without the 0x prefix, or with a non-hex digit', () => {
    expect(() => packed(['0x1234'], 20)).toThrow(/20-byte/)
    expect(() => packed([`00${'11'.repeat(20)}` as Hex], 20)).toThrow(/20-byte/)
    expect(() => packed([`0x${'11'.repeat(19)}zz` as Hex], 20)).toThrow(/20-byte/)
    expect(() => packed([`0x${'1'.repeat(39)}g` as Hex], 20)).toThrow(/20-byte/)
  })
})
