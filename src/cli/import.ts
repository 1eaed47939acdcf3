import { parseArgs } from 'node:util'
import type { Env } from '../config/env.ts'
import { readAdminFile } from './data-dir.ts'
import { UsageError, usageOf } from './usage.ts'

const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/

/**
 * `halyard import --network SLUG --parquet DIR [--batch N]`: history from cryo-layout Parquet
 * files into the index (src/indexer/bulk/import.ts), continuing the network's cursor.
 */
export async function runImport(args: string[], env: Env): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      network: { type: 'string' },
      parquet: { type: 'string' },
      batch: { type: 'string' },
    },
    strict: true,
  })
  const network = values.network
  if (!network || !SLUG.test(network))
    throw new UsageError('--network SLUG is required (e.g. ethereum, base-sepolia)', usageOf('import'))
  if (!values.parquet) throw new UsageError('--parquet DIR is required', usageOf('import'))
  // Unset: the importer's own default (src/indexer/bulk/import.ts).
  const batch = values.batch === undefined ? undefined : Number(values.batch)
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > 100_000))
    throw new UsageError('--batch must be a whole number of blocks between 1 and 100000', usageOf('import'))
  // PGlite is one process's database: a server holding the data dir must be stopped first.
  if (!env.DATABASE_URL && readAdminFile(env.dataDir))
    throw new UsageError('a running server holds the data dir: stop it before importing')
  const { CryoParquetSource } = await import('../indexer/bulk/cryo-parquet.ts')
  const { importBulk } = await import('../indexer/bulk/import.ts')
  const { openStorage } = await import('../storage/database.ts')
  const { migrate } = await import('../storage/migrate.ts')
  const source = CryoParquetSource.open(values.parquet)
  const span = source.range()
  console.log(`importing ${network} blocks ${span.from}..${span.to} from ${values.parquet}`)
  const storage = await openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir })
  try {
    await migrate(storage.db)
    const t0 = performance.now()
    const r = await importBulk({
      storage,
      network: { slug: network, chainId: undefined },
      source,
      ...(batch === undefined ? {} : { batchBlocks: batch }),
      onBatch: (p) =>
        console.log(
          `  up to block ${p.to}: ${p.blocks} blocks, ${p.transfers} token transfers, ${p.native} native transfers`,
        ),
    })
    const s = ((performance.now() - t0) / 1000).toFixed(1)
    console.log(
      r.from === null
        ? `nothing to import: ${network} is indexed past block ${span.to}`
        : `imported blocks ${r.from}..${r.to} (${r.blocks} blocks, ${r.transfers} token transfers, ${r.native} native transfers, ${r.skippedLogs} logs skipped) in ${s} s`,
    )
  } finally {
    await storage.close()
  }
}
