/**
 * npm run bench:transfers — the transfer reads (docs/data-apis.md) for one address with 100,000 indexed
 * transfers: the first page and a page 500 pages deep of
 *   floor     the bare SQL keyset statement the REST route runs (its branches as one UNION ALL),
 *             executed alone: no HTTP, auth, JSON or metadata — what the database costs;
 *   REST      GET /v1/transfers/{chain}/{address} (direction both, 100 a page) over HTTP;
 *   Alchemy   alchemy_getAssetTransfers (fromAddress, maxCount 0x64) over HTTP on the
 *             compatibility root, plus its first page at Alchemy's default maxCount 0x3e8.
 * p50 (and p99) of BENCH_REQUESTS (default 200) sequential requests each, after a warm-up, with
 * the ratio to the floor. The issue's bar: p50 ≤ 10 ms.
 *
 * The rows are written straight into token_transfers / native_transfers (test/fixtures/transfers/
 * seed.ts: every category, ERC-1155 batches, self-sends, other addresses' rows), plus
 * 50,000 rows of ten other addresses. PGlite always; PostgreSQL too when DATABASE_URL is set
 * (a fresh schema, dropped after), with EXPLAIN ANALYZE of the deep page's branches.
 * Halyard runs in this process with its indexer off (nothing may write over the seeded rows).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { loadEnv } from '../src/config/env.ts'
import { networkSchema } from '../src/server/config-schema.ts'
import { startHalyard } from '../src/server/runtime.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import { lookupNetworkId } from '../src/storage/networks.ts'
import { saveMetas } from '../src/tokens/store.ts'
import { getAssetTransfers, parseAssetTransfersParams } from '../src/transfers/asset-transfers.ts'
import { decodeCursor } from '../src/transfers/cursor.ts'
import { addressBranches } from '../src/transfers/service.ts'
import { CATEGORIES, mergedSql, type Position } from '../src/transfers/store.ts'
import type { Address } from '../src/types.ts'
import { insertSeed, SEED_ITEMS, SEED_NFT, SEED_TOKEN, seedRows } from '../test/fixtures/transfers/seed.ts'

const HOLDER = '0x00000000000000000000000000000000000b3e5c' as Address
const TRANSFERS = Number(process.env.BENCH_TRANSFERS ?? 100_000)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200)
const DEEP = Number(process.env.BENCH_DEEP ?? 500)
const PAGE = 100
const NET = 'ethereum-devnet'

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number

async function measure(fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 20; i++) await fn()
  const lat: number[] = []
  for (let i = 0; i < REQUESTS; i++) {
    const t = process.hrtime.bigint()
    await fn()
    lat.push(ms(t))
  }
  lat.sort((a, b) => a - b)
  return { p50: pct(lat, 50), p99: pct(lat, 99) }
}

/** The REST route's read (store.ts): the branches as one statement, each ordered and limited. */
/** The network's id (migration 0160), as readTransfers passes it: set once the rows are seeded. */
let networkId: number | undefined

function floorQuery(after: Position | undefined) {
  const q = {
    network: NET,
    networkId,
    categories: CATEGORIES,
    order: 'desc' as const,
    after,
    limit: PAGE + 1,
  }
  const stmt = mergedSql(q, addressBranches(HOLDER, 'both'))
  if (!stmt) throw new Error('no branch')
  return stmt
}

async function run(name: 'PGlite' | 'PostgreSQL', storage: Storage): Promise<void> {
  await migrate(storage.db)
  const t0 = process.hrtime.bigint()
  const rows = seedRows(HOLDER, TRANSFERS)
  await insertSeed(storage.db, NET, rows)
  for (let h = 0; h < 10; h++) {
    const who = `0x${(0xc000 + h).toString(16).padStart(40, '0')}` as Address
    await insertSeed(storage.db, NET, seedRows(who, 5_000, BigInt(TRANSFERS + 1 + h * 2_000)))
  }
  await sql`analyze`.execute(storage.db)
  networkId = (await lookupNetworkId(storage.db, NET)) ?? undefined
  await saveMetas(storage.db, NET, [
    { contract: SEED_TOKEN, name: 'Bench', symbol: 'BNCH', decimals: 18 },
    { contract: SEED_NFT, name: 'Bench NFT', symbol: 'BNFT', decimals: null },
    { contract: SEED_ITEMS, name: 'Bench Items', symbol: 'BITM', decimals: null },
  ])
  console.log(
    `\n${name}: ${TRANSFERS} transfers of the address (${rows.length} rows with batch items and neighbours) + 50,000 other rows, seeded in ${(ms(t0) / 1000).toFixed(1)} s`,
  )

  const halyard = await startHalyard({
    env: loadEnv({
      HALYARD_LOG_LEVEL: 'error',
      HALYARD_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-bench-')),
    }),
    networks: [
      networkSchema.parse({
        chain: 'ethereum',
        network: 'devnet',
        chainId: 31337,
        upstreams: [{ url: 'http://127.0.0.1:9' }],
        indexer: { enabled: false, maxBlockRange: 2000, internalTransfers: 'off' },
      }),
    ],
    storage,
    secretKey: randomBytes(32),
    port: 0,
    host: '127.0.0.1',
  })
  try {
    const email = `bench-${randomBytes(3).toString('hex')}@halyard.local`
    await halyard.ctx.auth.createAccount(email, 'enterprise')
    const { key } = await halyard.ctx.auth.createKey({ accountEmail: email, env: 'test' })
    const transfers = halyard.services.transfers
    const net = halyard.ctx.networks.getBySlug(NET)

    // The cursors 500 pages deep, found by following them (in process: the same reads).
    let rest: string | null = null
    for (let i = 0; i < DEEP; i++) {
      const page = await transfers.list(net, HOLDER, {
        direction: 'both',
        categories: undefined,
        order: 'desc',
        limit: PAGE,
        cursor: rest ?? undefined,
      })
      rest = page.next_cursor
      if (rest === null) throw new Error(`the REST list ended after ${i + 1} pages`)
    }
    const alchemyParams = (pageKey?: string, maxCount = '0x64') => ({
      fromAddress: HOLDER,
      category: ['external', 'erc20', 'erc721', 'erc1155'],
      excludeZeroValue: false,
      maxCount,
      ...(pageKey ? { pageKey } : {}),
    })
    let pageKey: string | undefined
    for (let i = 0; i < DEEP; i++) {
      const out = await getAssetTransfers(transfers, net, parseAssetTransfersParams([alchemyParams(pageKey)]))
      pageKey = out.pageKey
      if (pageKey === undefined) throw new Error(`alchemy_getAssetTransfers ended after ${i + 1} pages`)
    }
    const deepPos = decodeCursor(rest as string)

    const rest1 = `${halyard.baseUrl}/transfers/${NET}/${HOLDER}?limit=${PAGE}`
    const restDeep = `${rest1}&cursor=${rest}`
    const alchemyUrl = `${halyard.baseUrl}/alchemy/${NET}/v2/${key}`
    const get = async (url: string) => {
      const res = await fetch(url, { headers: { 'x-api-key': key } })
      const body = (await res.json()) as { transfers: unknown[] }
      if (res.status !== 200 || body.transfers.length !== PAGE) throw new Error(`${url}: ${res.status}`)
    }
    const post = async (params: object, count: number) => {
      const res = await fetch(alchemyUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'alchemy_getAssetTransfers',
          params: [params],
        }),
      })
      const body = (await res.json()) as { result?: { transfers: unknown[] }; error?: unknown }
      if (body.result?.transfers.length !== count)
        throw new Error(`alchemy: ${JSON.stringify(body).slice(0, 300)}`)
    }
    const floor = (after: Position | undefined) => async () => {
      const r = await floorQuery(after).execute(storage.db)
      if (r.rows.length !== PAGE + 1) throw new Error('floor query came up short')
    }

    const results: [string, { p50: number; p99: number }, number][] = []
    const floorFirst = await measure(floor(undefined))
    const floorDeep = await measure(floor(deepPos))
    results.push(['floor: bare SQL keyset, first page', floorFirst, floorFirst.p50])
    results.push([`floor: bare SQL keyset, ${DEEP} pages deep`, floorDeep, floorDeep.p50])
    results.push(['GET /v1/transfers, first page', await measure(() => get(rest1)), floorFirst.p50])
    results.push([`GET /v1/transfers, ${DEEP} pages deep`, await measure(() => get(restDeep)), floorDeep.p50])
    results.push([
      'alchemy_getAssetTransfers 0x64, first page',
      await measure(() => post(alchemyParams(), PAGE)),
      floorFirst.p50,
    ])
    results.push([
      `alchemy_getAssetTransfers 0x64, ${DEEP} pages deep`,
      await measure(() => post(alchemyParams(pageKey), PAGE)),
      floorDeep.p50,
    ])
    results.push([
      'alchemy_getAssetTransfers 0x3e8, first page',
      await measure(() => post(alchemyParams(undefined, '0x3e8'), 1000)),
      floorFirst.p50,
    ])
    for (const [label, r, base] of results)
      console.log(
        `  ${label.padEnd(48)} p50 ${r.p50.toFixed(2).padStart(7)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms  ${(r.p50 / base).toFixed(1).padStart(5)}x floor${r.p50 <= 10 ? '' : '  (over 10 ms)'}`,
      )

    if (name === 'PostgreSQL') {
      const plan = await sql
        .raw(`explain (analyze, costs off, timing off) ${inline(floorQuery(deepPos).compile(storage.db))}`)
        .execute(storage.db)
      console.log(`  EXPLAIN ANALYZE, REST page ${DEEP} deep:`)
      for (const r of plan.rows as { 'QUERY PLAN': string }[]) console.log(`    ${r['QUERY PLAN']}`)
    }
  } finally {
    await halyard.close()
  }
}

/** Parameters inlined for EXPLAIN (bench values only: addresses, numbers, names). */
function inline(c: { sql: string; parameters: readonly unknown[] }): string {
  return c.sql.replace(/\$(\d+)/g, (_, i) => {
    const v = c.parameters[Number(i) - 1]
    return typeof v === 'number' ? String(v) : `'${String(v)}'`
  })
}

async function main() {
  console.log(`${TRANSFERS} transfers for one address; ${REQUESTS} sequential requests per row, p50/p99`)
  const lite = await openStorage({})
  try {
    await run('PGlite', lite)
  } finally {
    await lite.close()
  }
  const url = process.env.DATABASE_URL
  if (!url) {
    console.log('\nPostgreSQL: skipped (DATABASE_URL not set)')
    return
  }
  const schema = `bench_${randomBytes(4).toString('hex')}`
  const storage = await openStorage({ databaseUrl: url, schema, poolSize: 10 })
  try {
    await run('PostgreSQL', storage)
  } finally {
    await storage.close()
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`drop schema if exists ${schema} cascade`)
    await admin.end()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
