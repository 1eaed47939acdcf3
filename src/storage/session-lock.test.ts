import { sql } from 'kysely'
import pg from 'pg'
import { expect, it } from 'vitest'
import { serviceUrl } from '../../test/helpers/services.ts'
import { describeEachStorage, POSTGRES_ONLY, storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { withSessionLock } from './session-lock.ts'

/**
 * A session lock's connection terminated under its holder (what a PostgreSQL restart, a
 * failover or `pg_terminate_backend` does): the process lives on (the checked-out client's
 * 'error' has a listener), the holder hears it lost the lock, and another session can take it.
 */
describeEachStorage(
  'session locks when the connection goes ($name)',
  () => {
    it('tells the holder its lock is gone; nothing crashes; the lock is free for the next', async () => {
      const storage = await storageBackends()[1]!.open()
      const admin = new pg.Client({ connectionString: serviceUrl('DATABASE_URL') })
      await admin.connect()
      try {
        let pid = 0
        let heard = false
        const held = withSessionLock(storage, 'test-lock', async (conn, lost) => {
          const r = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)
          pid = r.rows[0]?.pid ?? 0
          // The holder idles on its connection (as the bundler and settlement do between rounds).
          await new Promise<void>((resolve) =>
            lost.addEventListener('abort', () => resolve(), { once: true }),
          )
          heard = true
          return 'lost' as const
        })
        await until('the lock to be held', () => pid > 0)
        await admin.query('select pg_terminate_backend($1)', [pid])
        expect(await held).toBe('lost')
        expect(heard).toBe(true)
        // Free for the next holder, on a fresh connection (the broken one was discarded).
        expect(await withSessionLock(storage, 'test-lock', async () => 'again')).toBe('again')
      } finally {
        await admin.end()
        await storage.close()
      }
    })
  },
  POSTGRES_ONLY,
)
