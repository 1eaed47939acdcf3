import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
import { sql } from 'kysely'
import { CryoParquetSource } from '../../src/indexer/bulk/cryo-parquet.ts'
import { importBulk } from '../../src/indexer/bulk/import.ts'
import type { Storage } from '../../src/storage/database.ts'
import { halyardCacheDir } from '../../src/storage/pglite-datadir.ts'
import { writeCryoParquet } from '../../test/fixtures/indexer/cryo-writer.ts'

/**
 * bench:index's bulk row: the bench chain written as cryo-layout Parquet (blocks, transactions,
 * logs, traces; test/fixtures/indexer/cryo-writer.ts, from the node's own answers, not timed),
 * cached beside the chain under a key of its head hash, then `halyard import`'s path
 * (CryoParquetSource + importBulk) timed into a fresh database: reading the files, decoding and
 * inserting, with no node in the way. Its floor, measured just before in the same run: the same
 * files read and decoded into blocks by the same source with nothing written (the rate the
 * import could reach if writing cost nothing, since the two overlap). Wall time on the shared
 * machine moves with other jobs' load; the import's CPU time (this process's, and the database
 * backend's when PostgreSQL runs on this host and the storage has a single connection) moves
 * far less, so it is printed beside it.
 */
export interface ImportRun {
  ms: number
  /** Reading and decoding the same files alone (CryoParquetSource, nothing written). */
  decodeMs: number
  blocks: number
  transfers: number
  native: number
  /** CPU time of this process during the import. */
  nodeCpuMs: number
  /** CPU time of the database backend during the import (undefined: not readable here). */
  dbCpuMs: number | undefined
  /** How long writing the Parquet files took (undefined: reused from the cache). */
  writtenMs: number | undefined
}

export async function parquetOf(
  url: string,
  head: bigint,
  headHash: string,
): Promise<{ dir: string; writtenMs: number | undefined }> {
  const dir = path.join(halyardCacheDir(), 'bench-index', `parquet-${head}-${headHash.slice(2, 18)}`)
  if (existsSync(dir)) return { dir, writtenMs: undefined }
  const tmp = `${dir}.tmp`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  const t0 = performance.now()
  await writeCryoParquet(url, tmp, 0n, head, { chunk: 50 })
  renameSync(tmp, dir)
  return { dir, writtenMs: performance.now() - t0 }
}

export async function importRun(
  storage: Storage,
  dir: string,
  writtenMs: number | undefined,
  chainId: number,
): Promise<ImportRun> {
  const d0 = performance.now()
  const source = CryoParquetSource.open(dir)
  for await (const _ of source.blocks(source.range().from, source.range().to)) {
    // decoded and dropped: the floor
  }
  const decodeMs = performance.now() - d0
  const backend = await backendCpu(storage)
  const db0 = backend?.()
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const r = await importBulk({
    storage,
    network: { slug: 'ethereum-devnet', chainId },
    source: CryoParquetSource.open(dir),
  })
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(c0)
  const db1 = backend?.()
  return {
    ms,
    decodeMs,
    nodeCpuMs: (cpu.user + cpu.system) / 1000,
    dbCpuMs: db0 === undefined || db1 === undefined ? undefined : db1 - db0,
    blocks: r.blocks,
    transfers: r.transfers,
    native: r.native,
    writtenMs,
  }
}

/**
 * Reads the CPU time (ms) of the storage's one PostgreSQL backend from /proc: undefined on PGlite
 * (it runs in this process), with a pool of more than one connection, or when the server is not
 * on this host.
 */
async function backendCpu(storage: Storage): Promise<(() => number | undefined) | undefined> {
  if (storage.kind !== 'postgres') return undefined
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(storage.db)
  const pid = rows[0]?.pid
  const read = () => {
    try {
      const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ')
      // utime and stime, in clock ticks of 10 ms (fields 14 and 15 of proc(5)).
      return (Number(fields[11]) + Number(fields[12])) * 10
    } catch {
      return undefined
    }
  }
  return read() === undefined ? undefined : read
}
