import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { type RawAnswer, sendRaw } from '../../test/hostile/hostile-harness.ts'
import { ADDR, ADMIN_TOKEN, fillPath } from '../../test/hostile/hostile-request.ts'
import { sweptRoutes } from '../../test/hostile/hostile-schemas.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { UNLIMITED_RPS } from '../http/charge.ts'
import { declaredRoutes } from '../http/pipeline.ts'

/**
 * The HTTP layer's edges with ordinary and with stubborn clients: an empty JSON body where none
 * is needed, a body that never completes, rate-limit headers of an unlimited plan, and keys in
 * the URL. Raw sockets where an HTTP client would tidy the request up.
 */

type ErrorBody = { error: { code: string; message: string; status: number } }

describe('HTTP edges (PGlite)', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let key: string
  let origin: URL

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      devMode: true, // webhooks to http://127.0.0.1
      env: { HALYARD_REQUEST_TIMEOUT: '1s' },
      extra: { adminToken: ADMIN_TOKEN },
    })
    key = await h.createKey({ plan: 'growth' })
    origin = new URL(h.halyard.origin)
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  /** One request on its own connection, written byte for byte. */
  const raw = (method: string, path: string, headers: Record<string, string>, body = '') =>
    sendRaw(
      origin,
      `${method} ${path} HTTP/1.1\r\nHost: ${origin.host}\r\nConnection: close\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n${body}`,
    )
  const json = (a: RawAnswer) => JSON.parse(a.text) as Record<string, unknown> & Partial<ErrorBody>

  const createWebhook = async () => {
    const res = await fetch(`${h.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: 'http://127.0.0.1:9/hook',
        chain: 'ethereum-devnet',
        event_type: 'address_activity',
        config: { addresses: [ADDR] },
      }),
    })
    expect(res.status).toBeLessThan(300)
    return ((await res.json()) as { id: string }).id
  }

  describe('Content-Type: application/json with an empty body', () => {
    const JSON_CT = { 'content-type': 'application/json' }
    const FRAMINGS: Record<string, string>[] = [{ 'content-length': '0' }, {}]

    it('DELETE /v1/webhooks/{id} deletes, with Content-Length: 0 and with no Content-Length', async () => {
      for (const framing of FRAMINGS) {
        const id = await createWebhook()
        const ans = await raw('DELETE', `/v1/webhooks/${id}`, { 'x-api-key': key, ...JSON_CT, ...framing })
        expect(ans.status, ans.text).toBe(200)
        expect(json(ans)).toEqual({ id, deleted: true })
      }
    })

    it('changes nothing on every GET and DELETE route the app serves', async () => {
      const routes = sweptRoutes(h.halyard.app).routes.filter(
        (r) => r.method === 'GET' || r.method === 'DELETE',
      )
      expect(routes.filter((r) => r.method === 'DELETE').length).toBeGreaterThan(0)
      expect(routes.length).toBeGreaterThan(10)
      const differ: string[] = []
      for (const r of routes) {
        // A real webhook for the routes on one (the DELETE removes it: one per request).
        const real = r.params.includes('id') && r.kind === 'keyed'
        const over: Record<string, string> = real ? { id: await createWebhook() } : {}
        const twin: Record<string, string> = real ? { id: await createWebhook() } : {}
        const auth: Record<string, string> =
          r.kind === 'admin' ? { authorization: `Bearer ${ADMIN_TOKEN}` } : { 'x-api-key': key }
        const plain = await raw(r.method, fillPath(r, over), auth)
        for (const framing of FRAMINGS) {
          const path = fillPath(r, twin)
          const withCt = await raw(r.method, path, { ...auth, ...JSON_CT, ...framing })
          const refusal = withCt.status >= 400 ? (json(withCt).error?.message ?? '') : ''
          if (withCt.status !== plain.status || /body/i.test(refusal))
            differ.push(`${r.method} ${path} ${JSON.stringify(framing)}: ${withCt.status} ${withCt.text}`)
          if (r.method === 'DELETE' && twin.id) twin.id = await createWebhook()
        }
      }
      expect(differ).toEqual([])
    })

    it('is no body on a POST that takes none: test event, redelivery, key revocation', async () => {
      const id = await createWebhook()
      const email = `revoke-${Date.now()}@test.local`
      await h.createKey({ email })
      const keyId = (await h.halyard.ctx.auth.listKeys(email))[0]!.id
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
      for (const framing of FRAMINGS) {
        const headers = { 'x-api-key': key, ...JSON_CT, ...framing }
        const test = await raw('POST', `/v1/webhooks/${id}/test`, headers)
        expect(test.status, test.text).toBe(200)
        const eventId = String(json(test).id)
        expect(eventId).toMatch(/^evt_[0-9a-f]{24}$/)
        const again = await raw('POST', `/v1/webhooks/${id}/deliveries/${eventId}/redeliver`, headers)
        expect(again.status, again.text).toBe(200)
        expect(json(again)).toMatchObject({ id: eventId, status: 'pending' })
        const revoked = await raw('POST', `/admin/keys/${keyId}/revoke`, { ...admin, ...JSON_CT, ...framing })
        expect(revoked.status, revoked.text).toBe(200)
        expect(json(revoked)).toMatchObject({ id: keyId, revoked_at: expect.any(String) })
      }
    })

    it('still refuses an empty body where one is required (POST, PATCH), naming it', async () => {
      const id = await createWebhook()
      for (const [method, path] of [
        ['POST', '/v1/webhooks'],
        ['PATCH', `/v1/webhooks/${id}`],
        ['POST', '/v1/rpc/ethereum/devnet'],
      ] as const) {
        const ans = await raw(method, path, { 'x-api-key': key, ...JSON_CT, 'content-length': '0' })
        expect(ans.status, `${method} ${path}`).toBe(400)
        expect(json(ans).error).toMatchObject({ code: 'invalid_request', message: /body is empty/ })
      }
    })
  })

  describe('the order of checks on a keyed route', () => {
    it('answers an unknown chain with 404 before a missing scope, and charges bad input no compute units', async () => {
      const rpcOnly = await h.createKey({ scopes: ['rpc:read'] })
      const get = (path: string, k: string) => fetch(`${h.baseUrl}${path}`, { headers: { 'x-api-key': k } })
      expect((await get(`/tokens/nowhere/metadata/${ADDR}`, rpcOnly)).status).toBe(404)
      expect((await get(`/tokens/ethereum-devnet/metadata/${ADDR}`, rpcOnly)).status).toBe(403)

      const route = '/v1/tokens/:chain/metadata/:contract'
      const charged = async () =>
        (await h.halyard.ctx.metrics.computeUnits.get()).values.find((v) => v.labels.route === route)
          ?.value ?? 0
      const before = await charged()
      const bad = await get('/tokens/ethereum-devnet/metadata/0xnothex', key)
      expect(bad.status).toBe(400)
      // Counted as one request (the headers say so), but no compute units.
      expect(bad.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/)
      expect(await charged()).toBe(before)
      await get(`/tokens/ethereum-devnet/metadata/${ADDR}`, key)
      expect(await charged()).toBe(before + 5)
    })
  })

  describe('a body that never completes', () => {
    it('is cut at the deadline with the error body and X-Request-Id, and is not charged', async () => {
      // One request a day: were the stalled requests counted, the good one below would be a 429.
      const email = `stall-${Date.now()}@test.local`
      const free = await h.createKey({ plan: 'free', email })
      await storage.db.updateTable('accounts').set({ limit_rpd: '1' }).where('email', '=', email).execute()

      const stall = (path: string, id: string) =>
        raw(
          'POST',
          path,
          {
            'x-api-key': free,
            'x-request-id': id,
            'content-type': 'application/json',
            'content-length': '1000',
          },
          '{"',
        )
      const cut = await Promise.all([
        stall('/v1/rpc/ethereum/devnet', 'stall-rpc'),
        stall('/v1/webhooks', 'stall-rest'),
      ])
      for (const [i, ans] of cut.entries()) {
        expect(ans.status, ans.text).toBe(400)
        expect(json(ans)).toEqual({
          error: {
            code: 'invalid_request',
            message: expect.stringMatching(/did not arrive within/),
            status: 400,
          },
        })
        expect(ans.headers['x-request-id']).toBe(i === 0 ? 'stall-rpc' : 'stall-rest')
        expect(ans.headers['x-ratelimit-limit']).toBeUndefined()
      }

      const rpc = `${h.baseUrl}/rpc/ethereum/devnet`
      const first = await postRpc(rpc, free, call('eth_chainId'))
      expect(first.status).toBe(200)
      const second = await postRpc(rpc, free, call('eth_chainId'))
      expect(second.status).toBe(429)
      expect(second.json).toMatchObject({ error: { message: /1 requests per day/ } })
    })
  })

  describe('X-RateLimit-* on an unlimited plan', () => {
    it('are numbers: the documented ceiling, or the per-account override', async () => {
      const enterprise = await h.createKey({ plan: 'enterprise' })
      const res = await postRpc(`${h.baseUrl}/rpc/ethereum/devnet`, enterprise, call('eth_chainId'))
      expect(res.status).toBe(200)
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(UNLIMITED_RPS))
      expect(res.headers.get('x-ratelimit-limit')).toBe('2147483647')
      expect(res.headers.get('x-ratelimit-remaining')).toBe('2147483647')
      expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d{10}$/)

      const email = `ent-${Date.now()}@test.local`
      const capped = await h.createKey({ plan: 'enterprise', email })
      await storage.db.updateTable('accounts').set({ limit_rps: 50 }).where('email', '=', email).execute()
      const c = await postRpc(`${h.baseUrl}/rpc/ethereum/devnet`, capped, call('eth_chainId'))
      expect(c.headers.get('x-ratelimit-limit')).toBe('50')
      expect(Number(c.headers.get('x-ratelimit-remaining'))).toBeLessThan(50)
    })
  })

  describe('?apiKey= in the URL', () => {
    it('is refused on plain HTTP routes with a message naming the headers to use', async () => {
      for (const [method, path] of [
        ['GET', `/v1/webhooks?apiKey=${key}`],
        ['GET', `/v1/tokens/ethereum-devnet/balances/${ADDR}?apiKey=${key}`],
        ['POST', `/v1/rpc/ethereum/devnet?apiKey=${key}`],
      ] as const) {
        const res = await fetch(`${h.halyard.origin}${path}`, {
          method,
          ...(method === 'POST' ? { body: JSON.stringify(call('eth_chainId')) } : {}),
        })
        const body = (await res.json()) as ErrorBody
        expect(res.status, path).toBe(401)
        expect(body.error.code).toBe('unauthorized')
        expect(body.error.message).toMatch(/X-API-Key header or as Authorization: Bearer/)
        expect(body.error.message).toMatch(/only on WebSocket upgrades/)
      }
      // A key in the headers is used; a stray ?apiKey= beside it changes nothing.
      const ok = await postRpc(`${h.baseUrl}/rpc/ethereum/devnet?apiKey=junk`, key, call('eth_chainId'))
      expect(ok.status).toBe(200)
    })

    it('is accepted on WebSocket upgrades', async () => {
      const ws = new WebSocket(`${h.halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`)
      try {
        const reply = await new Promise<unknown>((resolve, reject) => {
          ws.once('error', reject)
          ws.once('unexpected-response', (_req, res) =>
            reject(new Error(`upgrade refused: ${res.statusCode}`)),
          )
          ws.once('open', () => ws.send(JSON.stringify(call('eth_chainId'))))
          ws.once('message', (data) => resolve(JSON.parse(String(data))))
        })
        expect(reply).toMatchObject({ id: 1, result: `0x${anvil.chainId.toString(16)}` })
      } finally {
        ws.close()
      }
    })
  })

  describe('path parameters the network binding proves', () => {
    it('are not parsed again on the JSON-RPC path, and an unknown network is still a 404', async () => {
      const meta = (method: string, url: string) =>
        declaredRoutes(h.halyard.app).find((d) => d.method === method && d.url === url)?.meta
      expect(meta('POST', '/v1/rpc/:chain/:network')?.parseParams).toBe(false)
      // A path with more than the network in it is still parsed (the address is checked).
      expect(meta('GET', '/v1/tokens/:chain/balances/:address')?.parseParams).toBe(true)
      for (const path of ['/rpc/ethereum/nope', `/rpc/${'x'.repeat(100)}/devnet`]) {
        const res = await postRpc(`${h.baseUrl}${path}`, key, call('eth_chainId'))
        const body = res.json as unknown as ErrorBody
        expect(res.status, path).toBe(404)
        expect(body.error).toMatchObject({ code: 'not_found', status: 404 })
      }
    })
  })
})
