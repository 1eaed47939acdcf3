import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { serviceUrl } from '../../test/helpers/services.ts'
import { describeEachStorage, POSTGRES_ONLY, storageBackends } from '../../test/helpers/storage.ts'
import { HalyardError } from '../errors.ts'
import { openStorage } from '../storage/database.ts'
import { AuthService } from './service.ts'
import { AuthStore } from './store.ts'

/**
 * Key checks while the database cannot answer (docs/dependency-failures.md): a key verified
 * within the stale window is still served, a key never seen gets 503 with Retry-After (never
 * a 500), and a revocation made meanwhile takes effect once the database answers again. The
 * clock is injected for the cache's freshness; the database's unavailability is real.
 */

const codeOf = (err: unknown) =>
  err instanceof HalyardError ? { code: err.code, headers: err.headers } : err

describe('API keys while the store is gone (PGlite closed)', () => {
  it('serves a known key within the stale window only, and answers the rest with 503 + Retry-After', async () => {
    const storage = await storageBackends()[0]!.open()
    let clock = 1_700_000_000_000
    const auth = new AuthService(new AuthStore(storage.db), { now: () => clock, staleMs: 60_000 })
    const noStale = new AuthService(new AuthStore(storage.db), { now: () => clock, staleMs: 0 })
    await auth.createAccount('stale@example.com')
    const created = await auth.createKey({ accountEmail: 'stale@example.com', env: 'test' })
    await auth.authenticate(created.key)
    await noStale.authenticate(created.key)
    await storage.close()

    clock += 30_000
    expect((await auth.authenticate(created.key)).keyId).toBe(created.id)
    const never = await auth.authenticate(`halyard_test_${'x'.repeat(32)}`).catch(codeOf)
    expect(never).toEqual({ code: 'service_unavailable', headers: { 'retry-after': '1' } })
    expect(await noStale.authenticate(created.key).catch(codeOf)).toMatchObject({
      code: 'service_unavailable',
    })
    // Past the window the key is not vouched for any more.
    clock += 30_000
    expect(await auth.authenticate(created.key).catch(codeOf)).toMatchObject({ code: 'service_unavailable' })
  }, 120_000)
})

describeEachStorage(
  'API keys while PostgreSQL does not answer ($name)',
  () => {
    it('answers within the database deadline, then a revocation made meanwhile takes effect', async () => {
      const url = serviceUrl('DATABASE_URL')
      const base = await storageBackends()[1]!.open()
      const schema = base.schema as string
      const deadlineMs = 500
      // Same schema, its own pool with a short deadline.
      const storage = await openStorage({ databaseUrl: url, schema, poolSize: 4, timeoutMs: deadlineMs })
      const holder = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
      try {
        let clock = 1_700_000_000_000
        const auth = new AuthService(new AuthStore(storage.db), { now: () => clock, waitMs: deadlineMs })
        await auth.createAccount('frozen@example.com')
        const created = await auth.createKey({ accountEmail: 'frozen@example.com', env: 'test' })
        await auth.authenticate(created.key)

        // Lookups now wait behind a lock: for the service, a database that does not answer.
        await holder.connect()
        await holder.query('begin')
        await holder.query('lock table api_keys in access exclusive mode')
        clock += 2_000
        const hung = Symbol('hung')
        const bounded = <T>(p: Promise<T>) =>
          Promise.race([p, new Promise<typeof hung>((r) => setTimeout(() => r(hung), deadlineMs + 1_000))])
        const known = await bounded(auth.authenticate(created.key))
        expect(known).not.toBe(hung)
        expect(known).toMatchObject({ keyId: created.id })
        const never = await bounded(auth.authenticate(`halyard_test_${'y'.repeat(32)}`).catch(codeOf))
        expect(never).toEqual({ code: 'service_unavailable', headers: { 'retry-after': '1' } })

        // Revoked while the service could not look, then the database answers again.
        await holder.query(`update api_keys set revoked_at = now() where id = $1`, [created.id])
        await holder.query('commit')
        clock += 2_000
        let refused: unknown
        for (let i = 0; i < 50 && !refused; i++) {
          refused = await auth.authenticate(created.key).then(
            () => undefined,
            (err: unknown) => codeOf(err),
          )
          if (!refused) await new Promise((r) => setTimeout(r, 20))
        }
        expect(refused).toMatchObject({ code: 'unauthorized' })
      } finally {
        await holder.end().catch(() => {})
        await storage.close()
        await base.close()
      }
    })
  },
  POSTGRES_ONLY,
)
