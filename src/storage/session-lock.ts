import { sql } from 'kysely'
import type { DB, Storage } from './database.ts'

/** Never aborted: PGlite has one process and no sessions to lose. */
const NEVER = new AbortController().signal

/**
 * Runs `fn` on one connection while holding the session advisory lock `key` (hashed with the
 * schema, so tenants sharing a database do not exclude each other); `'busy'` when another
 * session holds it. `lost` is aborted when the connection goes (a PostgreSQL restart, a
 * failover, `pg_terminate_backend`): the lock went with it, another instance may take it now,
 * and `fn` must stop and return; the caller contends again after its backoff. The broken
 * connection is released to the pool, which discards it.
 *
 * On PGlite (one process, no other instance) `fn` runs on the database itself, without a lock.
 */
export async function withSessionLock<T>(
  storage: Storage,
  key: string,
  fn: (conn: DB, lost: AbortSignal) => Promise<T>,
): Promise<T | 'busy'> {
  if (storage.kind !== 'postgres' || !storage.sessionLost) return fn(storage.db, NEVER)
  const watch = storage.sessionLost
  return storage.db.connection().execute(async (conn) => {
    const got = await sql<{ ok: boolean; pid: number }>`
      select pg_try_advisory_lock(hashtext(current_schema() || ':' || ${key})) as ok,
             pg_backend_pid() as pid`.execute(conn)
    const row = got.rows[0]
    if (!row?.ok) return 'busy' as const
    const lost = watch(row.pid)
    try {
      return await fn(conn, lost)
    } finally {
      if (!lost.aborted)
        await sql`select pg_advisory_unlock(hashtext(current_schema() || ':' || ${key}))`
          .execute(conn)
          .catch(() => {})
    }
  })
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleepUnless(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const t = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}
