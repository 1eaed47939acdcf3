/**
 * npm run bench:storage — bytes per transfer row, table plus indexes (pg_total_relation_size summed
 * over the partitions), for BENCH_ROWS (default 100,000) synthetic token transfers and as many
 * native transfers, in four states:
 *   before     the 0100 layout (migrations up to 0134: hex text, the network slug and the block
 *              hash in every row), written by the old writer's statement;
 *   migrated   the same rows after migration 0160 (indexes built once, after the copy);
 *   live       the 0160 layout written by the indexer's own save functions, block after block
 *              (indexes grown by inserts: random keys leave B-tree pages about 70% full);
 *   sealed     the live partition after REINDEX, as docs/storage.md does for a block range no
 *              reorg can reach any more.
 * The rows: 100 token transfers a block, 1.3 per transaction, senders and receivers drawn from
 * BENCH_ROWS/5 addresses with a few hot ones, 1,000 contracts, 80% ERC-20 (amounts of 1 to 24
 * digits), 15% ERC-721, 5% ERC-1155. PostgreSQL when DATABASE_URL is set (fresh schemas, dropped
 * after), PGlite otherwise. The goal: at most 250 bytes per token transfer row.
 */
import { randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import {
  type StoredNativeTransfer,
  type StoredTransfer,
  saveNativeTransfers,
  saveTransfers,
} from '../src/indexer/store.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import type { Database } from '../src/storage/schema.ts'
import type { Address, Hash } from '../src/types.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const PER_BLOCK = 100
const NET = 'ethereum-mainnet'
const FIRST_BLOCK = 18_000_000n

/** A small deterministic PRNG (mulberry32): the same rows on every run. */
function prng(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function synthesize(): { tokens: StoredTransfer[]; natives: StoredNativeTransfer[] } {
  const rnd = prng(7)
  const hex = (bytes: number) =>
    `0x${Array.from({ length: bytes }, () =>
      Math.floor(rnd() * 256)
        .toString(16)
        .padStart(2, '0'),
    ).join('')}`
  const pool = Array.from({ length: Math.max(10, Math.floor(ROWS / 5)) }, () => hex(20) as Address)
  const contracts = Array.from({ length: 1000 }, () => hex(20) as Address)
  // Skewed: a cube pulls most draws toward the first (hot) entries.
  const pick = <T>(xs: T[]) => xs[Math.floor(xs.length * rnd() ** 3)] as T
  const amount = () => BigInt(Math.floor(rnd() * 1e9)) * 10n ** BigInt(Math.floor(rnd() * 16)) + 1n
  const tokens: StoredTransfer[] = []
  const natives: StoredNativeTransfer[] = []
  let txHash = hex(32) as Hash
  for (let i = 0; i < ROWS; i++) {
    const block = FIRST_BLOCK + BigInt(Math.floor(i / PER_BLOCK))
    const logIndex = i % PER_BLOCK
    if (rnd() < 0.77) txHash = hex(32) as Hash
    const blockHash = `0x${block.toString(16).padStart(64, 'b')}` as Hash
    const timestamp = 1_700_000_000 + Number(block - FIRST_BLOCK) * 12
    const r = rnd()
    const standard = r < 0.8 ? 'ERC20' : r < 0.95 ? 'ERC721' : 'ERC1155'
    tokens.push({
      blockNumber: block,
      blockHash,
      timestamp,
      logIndex,
      batchIndex: 0,
      txHash,
      standard,
      contract: pick(contracts),
      from: pick(pool),
      to: pick(pool),
      tokenId: standard === 'ERC20' ? null : BigInt(Math.floor(rnd() * 10_000)),
      value:
        standard === 'ERC20' ? amount() : standard === 'ERC721' ? 1n : BigInt(1 + Math.floor(rnd() * 100)),
    } as StoredTransfer)
    const internal = rnd() < 0.1
    natives.push({
      blockNumber: block,
      blockHash,
      timestamp,
      txIndex: logIndex,
      traceIndex: internal ? 1 : 0,
      txHash: hex(32) as Hash,
      category: internal ? 'internal' : 'external',
      tracePath: internal ? '0.0' : null,
      from: pick(pool),
      to: rnd() < 0.01 ? null : pick(pool),
      value: rnd() < 0.3 ? 0n : amount(),
    })
  }
  return { tokens, natives }
}

type Db = Kysely<Database>

/** The 0100 layout's writer statement (src/indexer/store.ts before migration 0160). */
async function saveOldLayout(db: Db, tokens: StoredTransfer[], natives: StoredNativeTransfer[]) {
  const CHUNK = 5000
  for (let i = 0; i < tokens.length; i += CHUNK) {
    const p = tokens.slice(i, i + CHUNK)
    await sql`
      insert into token_transfers (network, block_number, log_index, batch_index, block_hash,
        block_timestamp, tx_hash, standard, contract, from_address, to_address, token_id, value)
      select ${NET}, * from unnest(
        ${p.map((t) => t.blockNumber.toString())}::bigint[], ${p.map((t) => t.logIndex)}::integer[],
        ${p.map((t) => t.batchIndex)}::integer[], ${p.map((t) => t.blockHash)}::text[],
        ${p.map((t) => String(t.timestamp))}::bigint[], ${p.map((t) => t.txHash)}::text[],
        ${p.map((t) => t.standard)}::text[], ${p.map((t) => t.contract)}::text[],
        ${p.map((t) => t.from)}::text[], ${p.map((t) => t.to)}::text[],
        ${p.map((t) => t.tokenId?.toString() ?? null)}::numeric[], ${p.map((t) => t.value.toString())}::numeric[])`.execute(
      db,
    )
  }
  for (let i = 0; i < natives.length; i += CHUNK) {
    const p = natives.slice(i, i + CHUNK)
    await sql`
      insert into native_transfers (network, block_number, tx_index, trace_index, block_hash,
        block_timestamp, tx_hash, category, trace_path, from_address, to_address, value)
      select ${NET}, * from unnest(
        ${p.map((t) => t.blockNumber.toString())}::bigint[], ${p.map((t) => t.txIndex)}::integer[],
        ${p.map((t) => t.traceIndex)}::integer[], ${p.map((t) => t.blockHash)}::text[],
        ${p.map((t) => String(t.timestamp))}::bigint[], ${p.map((t) => t.txHash)}::text[],
        ${p.map((t) => t.category)}::text[], ${p.map((t) => t.tracePath)}::text[],
        ${p.map((t) => t.from)}::text[], ${p.map((t) => t.to)}::text[],
        ${p.map((t) => t.value.toString())}::numeric[])`.execute(db)
  }
}

/** Writes block by block (100 blocks a call), as the indexer's follower does. */
async function saveNewLayout(db: Db, tokens: StoredTransfer[], natives: StoredNativeTransfer[]) {
  const STEP = PER_BLOCK * 100
  for (let i = 0; i < tokens.length; i += STEP) {
    await saveTransfers(db, NET, tokens.slice(i, i + STEP))
    await saveNativeTransfers(db, NET, natives.slice(i, i + STEP))
  }
}

interface Size {
  heap: number
  indexes: number
  total: number
}

/** Table, TOAST and indexes of `table` and all its partitions. */
async function size(db: Db, table: string): Promise<Size> {
  const { rows } = await sql<{ heap: string; total: string; indexes: string }>`
    select coalesce(sum(pg_relation_size(relid)), 0)::text as heap,
      coalesce(sum(pg_indexes_size(relid)), 0)::text as indexes,
      coalesce(sum(pg_total_relation_size(relid)), 0)::text as total
    from (select relid from pg_partition_tree(${table}::regclass)
      union select ${table}::regclass where not exists (select from pg_partition_tree(${table}::regclass))) t`.execute(
    db,
  )
  const r = rows[0] ?? { heap: '0', total: '0', indexes: '0' }
  return { heap: Number(r.heap), indexes: Number(r.indexes), total: Number(r.total) }
}

const perRow = (s: Size) =>
  `${(s.total / ROWS).toFixed(1).padStart(6)} B/row (heap ${(s.heap / ROWS).toFixed(1)}, indexes ${(s.indexes / ROWS).toFixed(1)})`

async function report(db: Db, label: string): Promise<number> {
  const token = await size(db, 'token_transfers')
  const native = await size(db, 'native_transfers')
  console.log(`${label.padEnd(10)} token ${perRow(token)}   native ${perRow(native)}`)
  return token.total / ROWS
}

async function indexBreakdown(db: Db): Promise<void> {
  const { rows } = await sql<{ name: string; bytes: string }>`
    select c.relname as name, pg_relation_size(c.oid)::text as bytes
    from pg_partition_tree('token_transfers'::regclass) t
      join pg_index i on i.indrelid = t.relid join pg_class c on c.oid = i.indexrelid
    order by c.relname`.execute(db)
  for (const r of rows)
    console.log(`           ${r.name.padEnd(36)} ${(Number(r.bytes) / ROWS).toFixed(1)} B/row`)
}

async function withStorage<T>(fn: (s: Storage) => Promise<T>): Promise<T> {
  const url = process.env.DATABASE_URL
  const schema = `bench_storage_${randomBytes(4).toString('hex')}`
  const storage = await openStorage(url ? { databaseUrl: url, schema, poolSize: 2, timeoutMs: 600_000 } : {})
  try {
    return await fn(storage)
  } finally {
    await storage.close()
    if (url) {
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      await admin.query(`drop schema if exists ${schema} cascade`)
      await admin.end()
    }
  }
}

async function main(): Promise<void> {
  const backend = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite (DATABASE_URL not set)'
  console.log(`storage per transfer row, ${ROWS} token + ${ROWS} native rows, ${backend}`)
  const { tokens, natives } = synthesize()
  await withStorage(async (s) => {
    await migrate(s.db, '0134_sponsorship_ceilings')
    await saveOldLayout(s.db, tokens, natives)
    await sql`vacuum analyze`.execute(s.db)
    await report(s.db, 'before')
    const t0 = Date.now()
    await migrate(s.db)
    await sql`vacuum analyze`.execute(s.db)
    await report(s.db, 'migrated')
    console.log(`           (migration 0160 moved the rows in ${((Date.now() - t0) / 1000).toFixed(1)} s)`)
  })
  await withStorage(async (s) => {
    await migrate(s.db)
    await saveNewLayout(s.db, tokens, natives)
    await sql`vacuum analyze`.execute(s.db)
    await report(s.db, 'live')
    await indexBreakdown(s.db)
    await sql`reindex table token_transfers_default`.execute(s.db)
    await sql`reindex table native_transfers_default`.execute(s.db)
    const sealed = await report(s.db, 'sealed')
    await indexBreakdown(s.db)
    console.log(`goal ≤ 250 B per token transfer row (sealed): ${sealed <= 250 ? 'met' : 'NOT met'}`)
  })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
