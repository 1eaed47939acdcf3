import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
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
 * import could reach if writing cost nothing, since the two overlap).
 */
export interface ImportRun {
  ms: number
  /** Reading and decoding the same files alone (CryoParquetSource, nothing written). */
  decodeMs: number
  blocks: number
  transfers: number
  native: number
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
  const t0 = performance.now()
  const r = await importBulk({
    storage,
    network: { slug: 'ethereum-devnet', chainId },
    source: CryoParquetSource.open(dir),
  })
  return {
    ms: performance.now() - t0,
    decodeMs,
    blocks: r.blocks,
    transfers: r.transfers,
    native: r.native,
    writtenMs,
  }
}
