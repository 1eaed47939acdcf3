import { sql } from 'kysely'
import type { DB } from './database.ts'

const ROLLBACK = Symbol('rollback')

/**
 * `/ready`'s database check: a write, not `select 1`, so a database that reads but cannot write
 * (a full disk) fails it. A temporary table gets one row, which extends its file on disk (the
 * moment PostgreSQL finds out the disk is full), then the transaction rolls back: nothing is
 * kept, nothing shared is touched.
 */
export async function probeWrite(db: DB): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await sql`create temporary table halyard_ready_probe (x int) on commit drop`.execute(trx)
      await sql`insert into halyard_ready_probe values (1)`.execute(trx)
      throw ROLLBACK
    })
  } catch (err) {
    if (err !== ROLLBACK) throw err
  }
}
