import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { type DataDirOrigin, preparePGliteDataDir, tightenDataDir } from './pglite-datadir.ts'
import { PGliteDialect } from './pglite-driver.ts'
import { type PGliteSettings, pgliteSettings, pgliteStartParams } from './pglite-settings.ts'
import type { Database } from './schema.ts'

export type DB = Kysely<Database>

export interface Storage {
  readonly db: DB
  readonly kind: 'pglite' | 'postgres'
  /** Whether other processes may open the same database directly (PostgreSQL only). */
  readonly sharedAccess: boolean
  /** PGlite with a data dir: whether it existed, was copied from the template or needed initdb. */
  readonly dataDirOrigin?: DataDirOrigin
  close(): Promise<void>
}

export interface StorageOptions {
  /** PostgreSQL URL; PGlite when unset. */
  databaseUrl?: string | undefined
  /** PGlite directory; in-memory when unset. */
  dataDir?: string | undefined
  /** PostgreSQL schema to use (created when missing); tests isolate themselves with it. */
  schema?: string | undefined
  poolSize?: number
  /** PGlite settings; default pgliteSettings() (PGLITE_DEFAULTS overridden by HALYARD_PGLITE_*). */
  pglite?: PGliteSettings
}

// int8 and numeric come back as strings from both drivers; stores convert to bigint.
pg.types.setTypeParser(20, (v) => v)
pg.types.setTypeParser(1700, (v) => v)

export async function openStorage(opts: StorageOptions): Promise<Storage> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.schema, opts.poolSize ?? 10)
  return openPGlite(opts.dataDir, opts.pglite ?? pgliteSettings())
}

async function openPostgres(url: string, schema: string | undefined, poolSize: number): Promise<Storage> {
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`)
  if (schema) {
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      await admin.query(`create schema if not exists ${schema}`)
    } finally {
      await admin.end()
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  await sql`select 1`.execute(db)
  return { db, kind: 'postgres', sharedAccess: true, close: () => db.destroy() }
}

async function openPGlite(dataDir: string | undefined, settings: PGliteSettings): Promise<Storage> {
  let dir: string | undefined
  let dataDirOrigin: DataDirOrigin | undefined
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    dir = path.join(dataDir, 'pgdata')
    dataDirOrigin = await preparePGliteDataDir(dir)
    // Every start, an existing data dir too: the database is its owner's only (pglite-datadir.ts).
    tightenDataDir(dataDir)
  }
  // Loaded here, not at the top: `serve` on PostgreSQL never pays for PGlite's module.
  const { PGlite } = await import('@electric-sql/pglite')
  const pglite = new PGlite(dir, {
    parsers: { 20: (v: string) => v, 1700: (v: string) => v },
    startParams: pgliteStartParams(settings, PGlite.defaultStartParams),
  })
  await pglite.waitReady
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) })
  return {
    db,
    kind: 'pglite',
    sharedAccess: false,
    ...(dataDirOrigin ? { dataDirOrigin } : {}),
    close: async () => {
      await db.destroy()
      // Files PGlite made while running (the CLI's umask covers them; an embedding process's may not).
      if (dataDir) tightenDataDir(dataDir)
    },
  }
}
