import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openStorage, type Storage } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { pgliteImage } from './pglite-image.ts'
import { describeEach, type Service, serviceUrl } from './services.ts'

export interface StorageBackend {
  name: 'pglite' | 'postgres'
  /** PostgreSQL needs DATABASE_URL; PGlite nothing. */
  needs?: readonly Service[]
  /** A fresh, migrated, isolated database (PGlite in memory, or a new PostgreSQL schema). */
  open(): Promise<TestStorage>
}

/** A test database; `schema` names the PostgreSQL schema (for child processes to share it). */
export type TestStorage = Storage & { readonly schema?: string }

const PGLITE: StorageBackend = { name: 'pglite', open: () => openTestPGlite() }

/** A fresh, migrated in-memory PGlite, started from the suite's image (test/helpers/pglite-image.ts). */
export function openTestPGlite(): Promise<Storage> {
  return openMigrated({ pgliteImage: pgliteImage() })
}
const POSTGRES: StorageBackend = {
  name: 'postgres',
  needs: ['DATABASE_URL'],
  open: () => openPostgresSchema(serviceUrl('DATABASE_URL')),
}

/** The backends this machine has: PGlite always; PostgreSQL too when DATABASE_URL is set (CI sets it). */
export function storageBackends(): StorageBackend[] {
  return process.env.DATABASE_URL ? [PGLITE, POSTGRES] : [PGLITE]
}

/**
 * A describe block per backend (`$name` in the title): PGlite always; PostgreSQL runs when
 * DATABASE_URL is set and is reported skipped, with the reason, when it is not.
 */
export function describeEachStorage(
  title: string,
  fn: (backend: StorageBackend) => void,
  backends: readonly StorageBackend[] = [PGLITE, POSTGRES],
): void {
  describeEach(backends, title, fn)
}

/** Only PostgreSQL (what PGlite's single connection cannot show), reported skipped without it. */
export const POSTGRES_ONLY: readonly StorageBackend[] = [POSTGRES]

async function openMigrated(opts: Parameters<typeof openStorage>[0]): Promise<Storage> {
  const storage = await openStorage(opts)
  await migrate(storage.db)
  return storage
}

/** A PostgreSQL schema of its own, dropped again on close. */
async function openPostgresSchema(url: string): Promise<TestStorage> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  // A generous database deadline: a CI machine under load is slower than any production
  // database, and a test waiting on a lock it set up on purpose must not fail for it. The
  // deadline itself is tested with its own short value (src/auth/key-stale.test.ts, test/faults).
  const storage = await openMigrated({ databaseUrl: url, schema, poolSize: 5, timeoutMs: 30_000 })
  return {
    ...storage,
    schema,
    async close() {
      await storage.close()
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query(`drop schema if exists ${schema} cascade`)
      await client.end()
    },
  }
}
