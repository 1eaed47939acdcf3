import { type Kysely, sql } from 'kysely'
import type { DB } from './database.ts'
import { migrations } from './migrations/index.ts'
import { withoutDeadline } from './pg-pool.ts'

/**
 * Applies every pending migration, in name order, each in its own transaction with its
 * bookkeeping row. Forward-only: there are no downs.
 *
 * Our own loop rather than Kysely's Migrator: that one introspects every table of every schema
 * (`pg_get_serial_sequence` per column), which fails when another schema of the same database is
 * dropped meanwhile — tests and tenants sharing one PostgreSQL do exactly that. This one only
 * touches the current schema. The table keeps Kysely's name and columns, so databases migrated
 * before stay readable.
 */
export async function migrate(db: DB, upTo?: string): Promise<string[]> {
  // A migration may rebuild a large table, and the lock may wait for another instance's: no
  // query deadline here (docs/dependency-failures.md).
  return withoutDeadline(() => migrateNow(db, upTo))
}

/** `upTo` (a migration name, inclusive) stops early: tests and benches build an older layout. */
async function migrateNow(db: DB, upTo: string | undefined): Promise<string[]> {
  return db.connection().execute(async (conn) => {
    // One migrator per schema at a time, across processes (two instances starting together).
    await sql`select pg_advisory_lock(hashtext(current_schema() || '.halyard_migrate'))`.execute(conn)
    try {
      await sql`
        create table if not exists kysely_migration (
          name varchar(255) primary key,
          timestamp varchar(255) not null
        )`.execute(conn)
      const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(conn)
      const done = new Set(rows.map((r) => r.name))
      const applied: string[] = []
      for (const name of Object.keys(migrations).sort()) {
        if (done.has(name)) continue
        if (upTo !== undefined && name > upTo) break
        const migration = migrations[name]
        if (!migration) continue
        try {
          await conn.transaction().execute(async (trx) => {
            await migration.up(trx as unknown as Kysely<unknown>)
            await sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(
              trx,
            )
          })
        } catch (err) {
          throw new Error(`migration ${name} failed: ${(err as Error).message}`)
        }
        applied.push(name)
      }
      return applied
    } finally {
      await sql`select pg_advisory_unlock(hashtext(current_schema() || '.halyard_migrate'))`.execute(conn)
    }
  })
}
