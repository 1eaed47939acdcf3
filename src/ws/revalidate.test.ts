import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawClient, until } from '../../test/fixtures/ws/test-client.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import type { AuthService } from '../auth/service.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'

/**
 * Open WebSockets follow their key: two Halyard instances on one database, the socket on the
 * second, the change made on the first (or straight in the database). A revoked key's sockets
 * close with 1008 within the couple of seconds docs/websocket.md promises; a scope removed or a plan
 * changed applies to the next message; the re-read is per key, not per socket.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

/** docs/websocket.md's promise: a revoked key's sockets close within about two seconds (with room for a loaded machine). */
const PROMISED_MS = 5_000

describe('WebSocket connections follow their key', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let a: TestHalyard
  let b: TestHalyard
  let n = 0

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    const networks = [anvilNetwork(anvil, { indexer: { enabled: false } })]
    a = await startTestHalyard({ networks, storage })
    b = await startTestHalyard({ networks, storage })
  })
  afterAll(async () => {
    await b?.close()
    await a?.close()
    await storage?.close()
    await anvil?.stop()
  })

  /** A new account on `plan` with a key (made through instance a). */
  async function account(plan: string, scopes?: string[]) {
    const auth: AuthService = a.halyard.ctx.auth
    const email = `ws-${process.pid}-${n++}@test.local`
    await auth.createAccount(email, plan)
    const key = await auth.createKey({ accountEmail: email, env: 'live', scopes })
    return { email, id: key.id, key: key.key, auth }
  }
  const open = (key: string) => RawClient.open(`${b.halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`)

  it('closes every socket of a revoked key with 1008 on another instance; other keys stay open', async () => {
    const revoked = await account('growth')
    const kept = await account('growth')
    const sockets = await Promise.all([open(revoked.key), open(revoked.key), open(revoked.key)])
    const other = await open(kept.key)
    await sockets[0]!.subscribe('newHeads')
    expect((await sockets[1]!.call('eth_chainId')).result).toBe('0x7a69')

    await revoked.auth.revokeKey(revoked.id)
    for (const s of sockets) {
      const closed = await until('the revoked key’s socket to close', () => s.closed, PROMISED_MS)
      expect(closed).toEqual({ code: 1008, reason: 'the API key was revoked' })
    }
    expect(b.halyard.services.ws.stats.revokedClosed).toBeGreaterThanOrEqual(3)
    expect(other.closed).toBeUndefined()
    expect((await other.call('eth_chainId')).result).toBe('0x7a69')
    await other.close()
  })

  it('applies a scope removed in the database to later messages, and closes once rpc:read is gone', async () => {
    const k = await account('growth', ['rpc:read', 'rpc:write'])
    const ws = await open(k.key)
    const write = () => ws.call('anvil_setBalance', ['0x00000000000000000000000000000000000b0b0b', '0x1'])
    expect((await write()).result).toBeNull()

    const setScopes = (scopes: string[]) =>
      sql`UPDATE api_keys SET scopes = ${scopes} WHERE id = ${k.id}`.execute(storage.db)
    await setScopes(['rpc:read'])
    const refused = await until(
      'the write to be refused',
      async () => {
        const r = await write()
        return r.error ? r : undefined
      },
      PROMISED_MS,
    )
    expect(refused.error).toMatchObject({ code: -32003, message: expect.stringContaining('rpc:write') })
    expect((await ws.call('eth_chainId')).result).toBe('0x7a69')

    await setScopes(['data:read'])
    const closed = await until('the socket to close', () => ws.closed, PROMISED_MS)
    expect(closed).toEqual({ code: 1008, reason: 'the API key no longer has the rpc:read scope' })
  })

  it('applies a plan change to an open socket: the new plan’s subscription limit', async () => {
    const k = await account('growth')
    const ws = await open(k.key)
    try {
      for (let i = 0; i < 25; i++) await ws.subscribe('newHeads')
      await k.auth.setPlan(k.email, 'free')
      // The free plan allows 25 per connection: the 26th is refused naming it (retried past
      // the free plan's request rate, which the 25 calls may have used up).
      const over = await until(
        'the free plan’s subscription limit on the open socket',
        async () => {
          const r = await ws.call('eth_subscribe', ['newHeads'])
          return /subscription limit/.test(JSON.stringify(r.error ?? '')) ? r : undefined
        },
        PROMISED_MS,
      )
      expect(over.error).toMatchObject({
        message: expect.stringContaining('25 subscriptions per connection on the free plan'),
      })
    } finally {
      await ws.close()
    }
  })

  it('re-reads each key once per pass, however many sockets share it', async () => {
    const one = await account('enterprise')
    const two = await account('enterprise')
    const sockets = await Promise.all([...Array.from({ length: 30 }, () => open(one.key)), open(two.key)])
    const ws = b.halyard.services.ws
    const before = { passes: ws.stats.revalidations, keys: ws.stats.keysRechecked }
    await until('four revalidation passes', () => ws.stats.revalidations >= before.passes + 4, 10_000)
    const passes = ws.stats.revalidations - before.passes
    // 31 sockets, but only their distinct keys are read, once per pass.
    expect(ws.connectionCount()).toBeGreaterThanOrEqual(31)
    expect(ws.keyCount()).toBeLessThan(10)
    expect(ws.stats.keysRechecked - before.keys).toBeLessThanOrEqual(ws.keyCount() * passes)
    await Promise.all(sockets.map((s) => s.close()))
  })
})
