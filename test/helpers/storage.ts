import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openStorage, type Storage } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'

export interface StorageBackend {
  name: 'pglite' | 'postgres'
  /** A fresh, migrated, isolated database (PGlite in memory, or a new PostgreSQL schema). */
  open(): Promise<TestStorage>
}

/** A test database; `schema` names the PostgreSQL schema (for child processes to share it). */
export type TestStorage = Storage & { readonly schema?: string }

/** PGlite always; PostgreSQL too when DATABASE_URL is set (CI sets it). */
export function storageBackends(): StorageBackend[] {
  const backends: StorageBackend[] = [{ name: 'pglite', open: () => openMigrated({}) }]
  const url = process.env.DATABASE_URL
  if (url) backends.push({ name: 'postgres', open: () => openPostgresSchema(url) })
  return backends
}

async function openMigrated(opts: Parameters<typeof openStorage>[0]): Promise<Storage> {
  const storage = await openStorage(opts)
  await migrate(storage.db)
  return storage
}

/** A PostgreSQL schema of its own, dropped again on close. */
async function openPostgresSchema(url: string): Promise<TestStorage> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  const storage = await openMigrated({ databaseUrl: url, schema, poolSize: 5 })
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
