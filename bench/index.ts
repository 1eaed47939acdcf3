/**
 * npm run bench:index [--blocks N] [--quick] — indexing throughput on a mainnet-density chain.
 *
 * 1. Chain (bench/lib/index-chain.ts): anvil, automine off, N blocks (default 1000; --quick
 *    100) of ≈ 170 transactions, 300 ERC-20 Transfer logs, 200 other logs and 20 internal
 *    value transfers each; cached under ~/.cache/halyard/bench-index.
 * 2. Floor (bench/lib/index-floor.ts): a bare parallel fetcher (16 in flight) reading every
 *    block with full transactions, its receipts and its logs: blocks/s.
 * 3. Halyard: IndexerService (what `halyard serve` runs) from block 0 on a fresh PostgreSQL
 *    schema when DATABASE_URL is set, else an in-memory PGlite: blocks/s, rows/s.
 * 4. Storage: bytes per token_transfers row (pg_total_relation_size: table, partitions,
 *    indexes, TOAST), and the projection to a year of mainnet and Base at the measured rate.
 * 5. Bulk (bench/lib/index-import.ts): the same blocks as cryo-layout Parquet, imported by
 *    `halyard import`'s path into a second fresh database: blocks/s, rows/s, no node in the way,
 *    beside its floor: the same files read and decoded with nothing written.
 *
 * --workers N sets indexer.backfillWorkers (default: the config's default).
 */
import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import pg from 'pg'
import { NetworkRegistry } from '../src/chains/registry.ts'
import { IndexerService } from '../src/indexer/service.ts'
import { createLogger } from '../src/logger.ts'
import { networkSchema } from '../src/server/config-schema.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import { benchChain } from './lib/index-chain.ts'
import { floorFetch } from './lib/index-floor.ts'
import { importRun, parquetOf } from './lib/index-import.ts'

const MAINNET_BLOCKS_PER_YEAR = 2_628_000
const BASE_BLOCKS_PER_YEAR = 15_768_000

const { values } = parseArgs({
  options: { blocks: { type: 'string' }, quick: { type: 'boolean' }, workers: { type: 'string' } },
  strict: true,
})
const blocks = values.blocks !== undefined ? Number(values.blocks) : values.quick ? 100 : 1000
if (!Number.isInteger(blocks) || blocks < 2 || blocks > 100_000) {
  console.error('--blocks must be an integer between 2 and 100000')
  process.exit(2)
}

const workers = values.workers === undefined ? undefined : Number(values.workers)
if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1 && workers <= 64)) {
  console.error('--workers must be an integer between 1 and 64')
  process.exit(2)
}

const fmt = (n: number, d = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const days = (blocksPerYear: number, rate: number) => blocksPerYear / rate / 86_400

async function relationBytes(storage: Storage, table: string): Promise<number> {
  // A partitioned table's own size is 0: sum its partitions (and theirs) too.
  const { rows } = await sql<{ bytes: string }>`
    with recursive parts(oid) as (
      select ${table}::regclass::oid
      union all select i.inhrelid from pg_inherits i join parts p on i.inhparent = p.oid)
    select coalesce(sum(pg_total_relation_size(oid)), 0)::text as bytes from parts`.execute(storage.db)
  return Number(rows[0]?.bytes ?? 0)
}

async function count(storage: Storage, table: 'token_transfers' | 'native_transfers' | 'token_holders') {
  const r = await storage.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(r.n)
}

async function main() {
  const dbUrl = process.env.DATABASE_URL
  console.log(`chain: ${blocks} blocks (mainnet density) …`)
  const chain = await benchChain({
    blocks,
    txsPerBlock: 170,
    transfersPerBlock: 300,
    otherLogsPerBlock: 200,
    internalPerBlock: 20,
  })
  console.log(
    chain.generatedMs === undefined
      ? `  loaded from cache, head ${chain.head}`
      : `  generated in ${fmt(chain.generatedMs / 1000, 1)} s, head ${chain.head}`,
  )
  const schema = `bench_idx_${randomBytes(4).toString('hex')}`
  const bulkSchema = `${schema}_bulk`
  const storage = await openStorage(dbUrl ? { databaseUrl: dbUrl, schema, poolSize: 10 } : {})
  let bulk: Storage | undefined
  try {
    await migrate(storage.db)
    const n = Number(chain.head) + 1
    const floor = await floorFetch(chain.anvil.url, 0n, chain.head)
    const floorRate = n / (floor.ms / 1000)

    const net = networkSchema.parse({
      chain: 'ethereum',
      network: 'devnet',
      chainId: 31337,
      confirmations: 0,
      blockTimeMs: 1000,
      upstreams: [{ url: chain.anvil.url }],
      requestTimeoutMs: 120_000,
      ...(workers === undefined ? {} : { indexer: { backfillWorkers: workers } }),
    })
    const networks = new NetworkRegistry([net])
    const indexer = new IndexerService({ storage, networks, logger: createLogger('warn'), pollMs: 20 })
    const t0 = performance.now()
    indexer.start()
    await indexer.waitForBlock('ethereum-devnet', chain.head, 3_600_000)
    const idxMs = performance.now() - t0
    const load = loadavg()
    await indexer.stop()
    await networks.close()
    const idxRate = n / (idxMs / 1000)
    const transfers = await count(storage, 'token_transfers')
    const native = await count(storage, 'native_transfers')
    const holders = await count(storage, 'token_holders')
    const rows = transfers + native + holders
    const transferBytes = await relationBytes(storage, 'token_transfers')
    const nativeBytes = await relationBytes(storage, 'native_transfers')
    const holderBytes = await relationBytes(storage, 'token_holders')
    const perBlockBytes = (transferBytes + nativeBytes + holderBytes) / n

    console.log('parquet (cryo layout, written from the node, cached) …')
    const headBlock = await fetch(chain.anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBlockByNumber',
        params: [`0x${chain.head.toString(16)}`, false],
      }),
    }).then(async (r) => ((await r.json()) as { result: { hash: string } }).result.hash)
    const files = await parquetOf(chain.anvil.url, chain.head, headBlock)
    // One connection: the import holds it throughout, so its backend's CPU time is the import's.
    bulk = await openStorage(dbUrl ? { databaseUrl: dbUrl, schema: bulkSchema, poolSize: 1 } : {})
    await migrate(bulk.db)
    const imp = await importRun(bulk, files.dir, files.writtenMs, 31337)
    const impHolders = await count(bulk, 'token_holders')
    const impRows = imp.transfers + imp.native + impHolders
    const impLoad = loadavg()

    console.log('')
    console.log(
      `blocks 0..${chain.head}: ${fmt(floor.txs)} txs, ${fmt(floor.logs)} logs; ${fmt(transfers)} token transfers, ${fmt(native)} native transfers, ${fmt(holders)} holder pairs indexed`,
    )
    console.log(
      `floor (bare fetcher, 16 in flight: block+txs, receipts, logs): ${fmt(floorRate, 1)} blocks/s (${fmt(floor.ms)} ms; ${fmt(floor.requests / n, 2)} requests and ${fmt(floor.bytes / n / 1024, 1)} KiB per block)`,
    )
    console.log(
      `halyard (${dbUrl ? 'PostgreSQL' : 'PGlite'}, IndexerService from 0): ${fmt(idxRate, 1)} blocks/s, ${fmt(rows / (idxMs / 1000))} rows/s (${fmt(idxMs)} ms)`,
    )
    console.log(`ratio halyard / floor: ${fmt(idxRate / floorRate, 3)}`)
    const impRate = imp.blocks / (imp.ms / 1000)
    const decodeRate = n / (imp.decodeMs / 1000)
    console.log(
      `bulk floor (the same Parquet files read and decoded, nothing written): ${fmt(decodeRate, 1)} blocks/s (${fmt(imp.decodeMs)} ms)`,
    )
    console.log(
      `bulk import (halyard import, cryo Parquet → ${dbUrl ? 'PostgreSQL' : 'PGlite'}, no node): ${fmt(impRate, 1)} blocks/s, ratio to the bulk floor ${fmt(impRate / decodeRate, 3)}, ${fmt(impRows / (imp.ms / 1000))} rows/s (${fmt(imp.ms)} ms; ${fmt(imp.transfers)} token, ${fmt(imp.native)} native transfers, ${fmt(impHolders)} holder pairs — ${imp.transfers === transfers && imp.native === native && impHolders === holders ? 'the same counts as the RPC path' : 'NOT the counts of the RPC path'})${imp.writtenMs === undefined ? '' : `; files written in ${fmt(imp.writtenMs / 1000, 1)} s`}; load after it ${impLoad.map((l) => l.toFixed(2)).join(' ')}`,
    )
    console.log(
      `bulk import CPU: Node ${fmt(imp.nodeCpuMs)} ms${imp.dbCpuMs === undefined ? '' : `, database backend ${fmt(imp.dbCpuMs)} ms`} (${fmt((imp.nodeCpuMs + (imp.dbCpuMs ?? 0)) / imp.blocks, 1)} ms per block)`,
    )
    console.log(
      `storage: token_transfers ${fmt(transferBytes / Math.max(1, transfers), 1)} B/row, native_transfers ${fmt(nativeBytes / Math.max(1, native), 1)} B/row, token_holders ${fmt(holderBytes / Math.max(1, holders), 1)} B/row; ${fmt(perBlockBytes / 1024, 1)} KiB per block`,
    )
    for (const [name, perYear] of [
      ['mainnet', MAINNET_BLOCKS_PER_YEAR],
      ['Base', BASE_BLOCKS_PER_YEAR],
    ] as const) {
      console.log(
        `a year of ${name} (${fmt(perYear / 1e6, 1)}M blocks): halyard ${fmt(days(perYear, idxRate), 1)} days, floor ${fmt(days(perYear, floorRate), 1)} days; ≈ ${fmt((perYear * perBlockBytes) / 2 ** 30, 0)} GiB at this density`,
      )
    }
    console.log(
      `load average at the end of indexing (1/5/15 min): ${load.map((l) => l.toFixed(2)).join(' ')}`,
    )
  } finally {
    await storage.close()
    await bulk?.close()
    if (dbUrl) {
      const c = new pg.Client({ connectionString: dbUrl })
      await c.connect()
      await c.query(`drop schema if exists ${schema} cascade`)
      await c.query(`drop schema if exists ${bulkSchema} cascade`)
      await c.end()
    }
    await chain.anvil.stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
