import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely'
import type { DB } from './database.ts'
import { migrations } from './migrations/index.ts'

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations
  }
}

/** Applies every pending migration, in name order. Forward-only: there are no downs. */
export async function migrate(db: DB): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one; with
  // several schemas in one database (tests, tenants) another schema's tables would fool it.
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db)
  const schema = rows[0]?.schema ?? 'public'
  const migrator = new Migrator({ db, provider: new StaticProvider(), migrationTableSchema: schema })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message}`)
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
