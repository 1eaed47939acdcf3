import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storageBackends } from '../../test/helpers/storage.ts'
import { HalyardError } from '../errors.ts'
import type { Storage } from '../storage/database.ts'
import { isWellFormedKey } from './key-format.ts'
import { AuthService } from './service.ts'
import { AuthStore } from './store.ts'

/**
 * The API-key cache against a flood of random well-formed keys: every such key is a
 * real lookup in the store (PGlite), and none of them may push a known key out. The clock is
 * injected and held still, so "answered from the cache" is not a race with the 1 s freshness.
 */
/** A random well-formed test key: base64 with its two non-base62 digits swapped (fast, unlike generateApiKey). */
function randomKey(): string {
  return `halyard_test_${randomBytes(24).toString('base64').replaceAll('+', 'p').replaceAll('/', 's')}`
}

describe('API key cache under a flood of random keys', () => {
  let storage: Storage
  let clock = 1_700_000_000_000
  const now = () => clock

  beforeAll(async () => {
    storage = await storageBackends()[0]!.open()
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('answers a known key from the cache after 200,000 unknown keys went to the store', {
    timeout: 180_000,
  }, async () => {
    const auth = new AuthService(new AuthStore(storage.db), { now })
    await auth.createAccount('flood@example.com')
    const created = await auth.createKey({ accountEmail: 'flood@example.com', env: 'test' })
    expect((await auth.authenticate(created.key)).keyId).toBe(created.id)
    const warm = auth.cacheStats()
    expect(warm).toMatchObject({ known: 1, unknown: 0 })

    expect(isWellFormedKey(randomKey())).toBe(true)
    const FLOOD = 200_000
    const outcomes = new Map<string, number>()
    const count = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1)
    for (let sent = 0; sent < FLOOD; sent += 1_000) {
      await Promise.all(
        Array.from({ length: 1_000 }, () =>
          auth.authenticate(randomKey()).then(
            () => count('accepted'),
            (err: unknown) => count(err instanceof HalyardError ? err.code : String(err)),
          ),
        ),
      )
    }
    expect(Object.fromEntries(outcomes)).toEqual({ unauthorized: FLOOD })
    const flooded = auth.cacheStats()
    // Unknown keys still reach the store, each looked up, arrivals sharing queries, and are
    // remembered apart from the known ones, in bounded space.
    expect(flooded.storeLookups - warm.storeLookups).toBe(FLOOD)
    expect(flooded.storeQueries - warm.storeQueries).toBeLessThan(FLOOD / 100)
    expect(flooded.unknown).toBeGreaterThan(0)
    expect(flooded.unknown).toBeLessThanOrEqual(10_000)
    expect(flooded.known).toBe(1)

    // The known key: on the synchronous hot path and through authenticate, without the store.
    expect(auth.cachedCaller(created.key)?.keyId).toBe(created.id)
    expect((await auth.authenticate(created.key)).keyId).toBe(created.id)
    expect(auth.cacheStats().storeLookups).toBe(flooded.storeLookups)
  })

  it('still stops a key revoked on another instance once its entry is a second old', async () => {
    const a = new AuthService(new AuthStore(storage.db), { now })
    const b = new AuthService(new AuthStore(storage.db), { now })
    await a.createAccount('revoke@example.com')
    const created = await a.createKey({ accountEmail: 'revoke@example.com', env: 'test' })
    await a.authenticate(created.key)
    await b.revokeKey(created.id)
    // Within the window instance A may still serve its cached resolution…
    clock += 500
    expect(a.cachedCaller(created.key)?.keyId).toBe(created.id)
    // …and not after it: the next call reads the store and refuses.
    clock += 500
    expect(a.cachedCaller(created.key)).toBeUndefined()
    await expect(a.authenticate(created.key)).rejects.toMatchObject({ code: 'unauthorized' })
    // The refused key now sits with the unknown ones, not among the known.
    expect(a.cacheStats()).toMatchObject({ known: 0, unknown: 1 })
  })
})

describe('API key lookups when the store fails', () => {
  it('answers every waiting caller (503, or the known key from the stale window) instead of leaving them pending', async () => {
    const storage = await storageBackends()[0]!.open()
    let clock = 1_700_000_000_000
    const auth = new AuthService(new AuthStore(storage.db), { now: () => clock })
    await auth.createAccount('down@example.com')
    const created = await auth.createKey({ accountEmail: 'down@example.com', env: 'test' })
    await auth.authenticate(created.key)
    await storage.close()
    clock += 1_000
    // More callers than queries allowed in flight: some wait in the queue for a batch.
    const keys = [created.key, ...Array.from({ length: 600 }, randomKey)]
    const outcomes = await Promise.allSettled(keys.map((k) => auth.authenticate(k)))
    const codes = new Set(
      outcomes
        .slice(1)
        .map((o) => (o.status === 'rejected' && o.reason instanceof HalyardError ? o.reason.code : o.status)),
    )
    // Never seen: 503 (the store is gone), not a 500. The key verified a second ago is served.
    expect([...codes]).toEqual(['service_unavailable'])
    expect(outcomes[0]).toMatchObject({ status: 'fulfilled', value: { keyId: created.id } })
    expect(auth.cacheStats()).toMatchObject({ storeLookups: 602, known: 1, unknown: 0 })
  })
})
