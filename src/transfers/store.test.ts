import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  insertSeed,
  SEED_ITEMS,
  SEED_OTHER,
  SEED_TOKEN,
  type SeedRow,
  seedRows,
} from '../../test/fixtures/transfers/seed.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import type { Storage } from '../storage/database.ts'
import { lookupNetworkId } from '../storage/networks.ts'
import type { Address } from '../types.ts'
import { decodeCursor, encodeCursor } from './cursor.ts'
import { addressBranches, type Direction } from './service.ts'
import {
  type AddressFilter,
  branchSql,
  CATEGORIES,
  type Category,
  comparePosition,
  type Position,
  readTransfers,
  type TransferQuery,
} from './store.ts'

const HOLDER = '0x00000000000000000000000000000000000a11ce' as Address
const NET = 'ethereum-devnet'
const key = (p: Position) => `${p.block}/${p.source}/${p.a}/${p.b}`

describeEachStorage('transfer keyset reads on $name', (backend) => {
  let storage: Storage
  const rows = seedRows(HOLDER, 240)

  beforeAll(async () => {
    storage = await backend.open()
    await insertSeed(storage.db, NET, rows)
    // Another network's rows at the same positions must never show.
    await insertSeed(storage.db, 'other-net', seedRows(HOLDER, 40))
  })
  afterAll(async () => {
    await storage?.close()
  })

  const matches = (r: SeedRow, branches: AddressFilter[]) =>
    branches.some(
      (f) =>
        (f.from === undefined || r.from === f.from) &&
        (f.to === undefined || r.to === f.to) &&
        (f.notFrom === undefined || r.from !== f.notFrom),
    )

  /** Follows the cursor to the end, `limit` at a time. */
  async function walk(
    q: Omit<TransferQuery, 'limit' | 'after' | 'network'>,
    branches: AddressFilter[],
    limit: number,
  ) {
    const seen: string[] = []
    let after: Position | undefined
    for (let pages = 0; pages < 1000; pages++) {
      const page = await readTransfers(storage.db, { ...q, network: NET, after, limit: limit + 1 }, branches)
      const shown = page.slice(0, limit)
      seen.push(...shown.map(key))
      const last = shown.at(-1)
      if (page.length <= limit || !last) return seen
      // Through the wire form, as a client would hand it back.
      after = decodeCursor(encodeCursor(last))
    }
    throw new Error('pagination did not end')
  }

  const expected = (
    branches: AddressFilter[],
    order: 'asc' | 'desc',
    keep: (r: SeedRow) => boolean = () => true,
  ) => {
    const sorted = rows.filter((r) => matches(r, branches) && keep(r)).sort(comparePosition)
    if (order === 'desc') sorted.reverse()
    return sorted.map(key)
  }

  for (const direction of ['both', 'from', 'to'] as Direction[]) {
    for (const order of ['desc', 'asc'] as const) {
      it(`walks every ${direction} transfer ${order}, 7 at a time, without duplicates or gaps`, async () => {
        const branches = addressBranches(HOLDER, direction)
        const seen = await walk({ categories: CATEGORIES, order }, branches, 7)
        const want = expected(branches, order)
        expect(want.length).toBeGreaterThan(50)
        expect(new Set(seen).size).toBe(seen.length)
        expect(seen).toEqual(want)
      })
    }
  }

  it('filters by category, block range, contract and zero value', async () => {
    const both = addressBranches(HOLDER, 'both')
    const cases: [Omit<TransferQuery, 'limit' | 'after' | 'network' | 'order'>, (r: SeedRow) => boolean][] = [
      [{ categories: ['external'] }, (r) => r.category === 'external'],
      [{ categories: ['internal', 'erc721'] }, (r) => r.category === 'internal' || r.category === 'erc721'],
      [{ categories: ['erc1155'] }, (r) => r.category === 'erc1155'],
      [{ categories: CATEGORIES, fromBlock: 10n, toBlock: 20n }, (r) => r.block >= 10n && r.block <= 20n],
      [{ categories: ['erc20', 'erc1155'], contracts: [SEED_ITEMS] }, (r) => r.contract === SEED_ITEMS],
      [{ categories: CATEGORIES, excludeZeroValue: true }, (r) => r.value !== 0n],
    ]
    for (const [q, keep] of cases) {
      for (const order of ['asc', 'desc'] as const) {
        expect(await walk({ ...q, order }, both, 5)).toEqual(expected(both, order, keep))
      }
    }
  })

  it('reads a whole network when no address is fixed, and a from-and-to pair', async () => {
    const all = await walk({ categories: CATEGORIES, order: 'asc' }, [{}], 50)
    expect(all.length).toBe(rows.length)
    const pair: AddressFilter[] = [{ from: HOLDER, to: SEED_OTHER }]
    expect(await walk({ categories: ['erc20'], order: 'desc', contracts: [SEED_TOKEN] }, pair, 4)).toEqual(
      expected(pair, 'desc', (r) => r.category === 'erc20' && r.contract === SEED_TOKEN),
    )
  })

  it('rejects cursors it did not make', () => {
    for (const bad of [
      '',
      'abc',
      'dDEuMS4wLjA',
      encodeCursor({ block: 1n, source: 1, a: 2, b: 3 }) + '!',
      '💥',
    ])
      expect(decodeCursor(bad)).toBeUndefined()
    expect(decodeCursor(Buffer.from('t1.5.2.0.0').toString('base64url'))).toBeUndefined()
    expect(decodeCursor(Buffer.from('t1.99999999999999999999.0.0.0').toString('base64url'))).toBeUndefined()
    const p: Position = { block: 123n, source: 1, a: 4, b: 2 }
    expect(decodeCursor(encodeCursor(p))).toEqual(p)
  })

  if (backend.name === 'postgres') {
    it('reads every branch as an index range scan (EXPLAIN)', async () => {
      // Enough rows for the planner to prefer the indexes on its own (no enable_seqscan games).
      // 40 addresses with 500 transfers each, in turns of 25 blocks (as on a real chain, an
      // address is a small share of the rows in any block range).
      const bulk: SeedRow[] = []
      const BULK_ADDRESS = `0x${(0xa000 + 7).toString(16).padStart(40, '0')}` as Address
      for (let h = 0; h < 40; h++) {
        const who = `0x${(0xa000 + h).toString(16).padStart(40, '0')}` as Address
        for (let turn = 0; turn < 5; turn++)
          bulk.push(...seedRows(who, 100, BigInt(turn * 40 * 25 + h * 25 + 1)))
      }
      bulk.push(...seedRows(HOLDER, 100, 1_000_000n))
      await insertSeed(storage.db, 'bulk', bulk)
      await sql`analyze native_transfers`.execute(storage.db)
      await sql`analyze token_transfers`.execute(storage.db)
      const after: Position = { block: 2000n, source: 1, a: 1, b: 0 }
      // As readTransfers passes it: the network id as a constant (src/storage/networks.ts).
      const networkId = (await lookupNetworkId(storage.db, 'bulk')) ?? undefined
      for (const order of ['asc', 'desc'] as const) {
        // A bulk address: the per-address index is keyed on a hash of the address (migration
        // 0160) and the planner goes by the key's statistics. For an address with few rows
        // (HOLDER here) reading them all and sorting them is its right choice; an address with
        // more rows than a page must be walked in index order.
        for (const f of addressBranches(BULK_ADDRESS, 'both')) {
          for (const source of [0, 1] as const) {
            const cats: Category[] = source === 0 ? ['external', 'internal'] : ['erc20', 'erc721', 'erc1155']
            const explain = async (limit: number) => {
              const q = branchSql(
                { network: 'bulk', networkId, categories: cats, order, after, limit },
                f,
                source,
                cats,
              )
              const compiled = q.compile(storage.db)
              const plan = await sql
                .raw(`explain ${substitute(compiled.sql, compiled.parameters)}`)
                .execute(storage.db)
              return (plan.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n')
            }
            // The tables are partitioned by block range (migration 0160): plans name the
            // partition's index, the default partition's here.
            const index = `${source === 0 ? 'native' : 'token'}_transfers_default_${f.from ? 'from' : 'to'}`
            // A page bigger than the address's rows: read them on the index, sort them.
            const whole = await explain(101)
            expect(whole, whole).toMatch(
              new RegExp(`(Index Scan( Backward)? using|Bitmap Index Scan on) ${index}`),
            )
            expect(whole, whole).not.toMatch(/Seq Scan/)
            // A page smaller: walk the index in block order and stop at the limit; only the few
            // rows of one block are put in their in-block order (an incremental sort).
            const page = await explain(5)
            expect(page, page).toMatch(new RegExp(`Index Scan( Backward)? using ${index}`))
            expect(page, page).not.toMatch(/Seq Scan|Bitmap|^\s*(->\s+)?Sort\s+\(/m)
          }
        }
      }
    })
  }
})

/** Inlines parameters for EXPLAIN (test values only: addresses, numbers, names). */
function substitute(text: string, params: readonly unknown[]): string {
  return text.replace(/\$(\d+)/g, (_, i) => {
    const v = params[Number(i) - 1]
    return typeof v === 'number' ? String(v) : `'${String(v)}'`
  })
}
