import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { type DatabaseHealth, databaseTimeoutMs, hardenedPool } from './pg-pool.ts'
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
  /** PostgreSQL only: up or down, from what queries saw (docs/dependency-failures.md). */
  readonly health?: DatabaseHealth
  /**
   * Aborted when the server session `pid` (`pg_backend_pid()`) is lost, and with it every session
   * lock it held (PostgreSQL only; src/storage/session-lock.ts).
   */
  sessionLost?(pid: number): AbortSignal
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
  /** Deadline of a connection and of each query (PostgreSQL); default HALYARD_DB_TIMEOUT_MS or 5 s. */
  timeoutMs?: number
  /** PGlite settings; default pgliteSettings() (PGLITE_DEFAULTS overridden by HALYARD_PGLITE_*). */
  pglite?: PGliteSettings
  /**
   * In-memory PGlite only: start from this data-dir image (PGlite's `dumpDataDir`) instead of
   * running initdb, which costs seconds per open (tests open hundreds: test/helpers/storage.ts).
   */
  pgliteImage?: Blob | undefined
}

// int8 and numeric come back as strings from both drivers; stores convert to bigint.
pg.types.setTypeParser(20, (v) => v)
pg.types.setTypeParser(1700, (v) => v)

export async function openStorage(opts: StorageOptions): Promise<Storage> {
  if (opts.databaseUrl)
    return openPostgres(
      opts.databaseUrl,
      opts.schema,
      opts.poolSize ?? 10,
      opts.timeoutMs ?? databaseTimeoutMs(),
    )
  return openPGlite(opts.dataDir, opts.pglite ?? pgliteSettings(), opts.pgliteImage)
}

async function openPostgres(
  url: string,
  schema: string | undefined,
  poolSize: number,
  timeoutMs: number,
): Promise<Storage> {
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`)
  if (schema) {
    const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
    admin.on('error', () => {})
    await admin.connect()
    try {
      await admin.query(`create schema if not exists ${schema}`)
    } finally {
      await admin.end()
    }
  }
  const hardened = hardenedPool({
    connectionString: url,
    max: poolSize,
    timeoutMs,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: hardened.pool }) })
  await sql`select 1`.execute(db)
  return {
    db,
    kind: 'postgres',
    sharedAccess: true,
    health: hardened.health,
    sessionLost: (pid) => hardened.sessionLost(pid),
    close: () => db.destroy(),
  }
}

async function openPGlite(
  dataDir: string | undefined,
  settings: PGliteSettings,
  image: Blob | undefined,
): Promise<Storage> {
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
  // Without a data dir PGlite takes its options only as the first argument and ignores a second:
  // an in-memory database has always run with PGlite's own parsers and start parameters.
  const pglite = dir
    ? new PGlite(dir, {
        parsers: { 20: (v: string) => v, 1700: (v: string) => v },
        startParams: pgliteStartParams(settings, PGlite.defaultStartParams),
      })
    : new PGlite(image ? { loadDataDir: image } : {})
  try {
    await pglite.waitReady
  } catch (err) {
    throw dir ? new Error(dataDirProblem(dir, err), { cause: err }) : err
  }
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

/**
 * PGlite only says "failed to initialize properly": name the data dir, and what is wrong with it
 * when a test write shows it (read-only, no permission, no space).
 */
function dataDirProblem(dir: string, err: unknown): string {
  const probe = path.join(dir, `.halyard-write-probe-${process.pid}`)
  let cause = (err as Error).message
  try {
    writeFileSync(probe, 'x')
    rmSync(probe, { force: true })
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    const why: Record<string, string> = {
      EROFS: 'the file system is read-only',
      EACCES: 'this user may not write there',
      EPERM: 'this user may not write there',
      ENOSPC: 'the disk is full',
      EDQUOT: 'the disk quota is exhausted',
    }
    cause = `${why[code ?? ''] ?? (e as Error).message} (${code ?? 'write failed'}); PGlite said: ${cause}`
  }
  return `PGlite could not open its data dir ${dir}: ${cause}`
}
