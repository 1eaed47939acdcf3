import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storageBackends } from '../../test/helpers/storage.ts'
import type { Storage } from '../storage/database.ts'
import { AuthService } from './service.ts'
import { AuthStore } from './store.ts'

/**
 * "Last used" per API key (the dashboard's keys page) against real PGlite: authenticating only marks the key in
 * memory; the flush writes last_used_at for the keys used, and leaves the others null.
 */
describe('API key last used', () => {
  let storage: Storage

  beforeAll(async () => {
    storage = await storageBackends()[0]!.open()
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('is written by the flush for a used key; an unused key stays null', async () => {
    const auth = new AuthService(new AuthStore(storage.db))
    await auth.createAccount('last-used@example.com')
    const used = await auth.createKey({ accountEmail: 'last-used@example.com', env: 'test', name: 'used' })
    const idle = await auth.createKey({ accountEmail: 'last-used@example.com', env: 'test', name: 'idle' })
    const before = new Date()

    // A cold lookup, then a cache hit: both count as a use.
    await auth.authenticate(used.key)
    expect(auth.cachedCaller(used.key)?.keyId).toBe(used.id)
    // Nothing reaches the database per request.
    const unflushed = await auth.listKeys('last-used@example.com')
    expect(unflushed.map((k) => k.last_used_at)).toEqual([null, null])

    await auth.flushLastUsed()
    const keys = new Map((await auth.listKeys('last-used@example.com')).map((k) => [k.id, k]))
    const lastUsed = keys.get(used.id)?.last_used_at
    expect(lastUsed).toEqual(expect.any(String))
    // Allow for the database clock's millisecond rounding against ours.
    expect(Date.parse(lastUsed!)).toBeGreaterThanOrEqual(before.getTime() - 1_000)
    expect(keys.get(idle.id)?.last_used_at).toBeNull()

    // Nothing used since: a flush writes nothing and changes nothing.
    await auth.flushLastUsed()
    expect((await auth.listKeys('last-used@example.com')).find((k) => k.id === used.id)?.last_used_at).toBe(
      lastUsed,
    )
  })

  it('writes what is left when the flush is stopped (server close)', async () => {
    const auth = new AuthService(new AuthStore(storage.db))
    await auth.createAccount('last-used-close@example.com')
    const key = await auth.createKey({ accountEmail: 'last-used-close@example.com', env: 'live' })
    // A long interval: only the stop can write it.
    auth.startLastUsedFlush(3_600_000)
    await auth.authenticate(key.key)
    await auth.stopLastUsedFlush()
    const [view] = await auth.listKeys('last-used-close@example.com')
    expect(view?.last_used_at).toEqual(expect.any(String))
  })
})
