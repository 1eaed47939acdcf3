import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'
import { utcDay } from '../usage/service.ts'
import type { RequestView } from './service.ts'
import { keyUsage, pruneRequests } from './store.ts'

/**
 * The request explorer's recording through a real gateway (anvil upstream), on both paths a
 * JSON-RPC request can take (the fast lane, and Fastify's pipeline with HALYARD_FAST_LANE=0):
 * single calls, a batch item by item, JSON-RPC errors, gate refusals (an origin off the key's
 * list), secrets redacted; read back through GET /v1/requests, where an account sees only its
 * own requests; per-key counts; pruning by time.
 */
for (const lane of ['1', '0'] as const) {
  describeEachStorage(
    `request explorer recording (fast lane ${lane === '1' ? 'on' : 'off'}, $name)`,
    (backend) => {
      let anvil: AnvilProcess
      let storage: Storage
      let h: TestHalyard
      let rpc: string

      beforeAll(async () => {
        anvil = await startAnvil()
        storage = await backend.open()
        h = await startTestHalyard({
          networks: [anvilNetwork(anvil)],
          storage,
          env: { HALYARD_FAST_LANE: lane },
        })
        rpc = `${h.baseUrl}/rpc/ethereum/devnet`
      })
      afterAll(async () => {
        await h?.close()
        await storage?.close()
        await anvil?.stop()
      })

      const newKey = async (allow?: { origins: string[] }) => {
        const auth = h.halyard.ctx.auth
        const email = `r-${Math.random().toString(16).slice(2)}@test.local`
        await auth.createAccount(email, 'enterprise')
        return auth.createKey({ accountEmail: email, env: 'test', name: 'explorer', allow })
      }
      const listed = async (key: string, query = '') => {
        await h.halyard.services.requests.recorder?.flush()
        const res = await fetch(`${h.baseUrl}/requests${query}`, { headers: { 'x-api-key': key } })
        const json = (await res.json()) as { requests: RequestView[]; retention_hours: number }
        return { status: res.status, json }
      }

      it('records single calls, batch items, JSON-RPC errors and refusals; each account sees its own', async () => {
        const a = await newKey()
        const b = await newKey()
        // Twice: the first request of a key goes through Fastify, the next through the lane.
        for (const id of ['ok-1', 'ok-2'])
          expect((await postRpc(rpc, a.key, call('eth_chainId'), { 'x-request-id': id })).status).toBe(200)
        await postRpc(rpc, a.key, call('eth_noSuchMethod', [1]), { 'x-request-id': 'bad-method' })
        await postRpc(rpc, a.key, [call('eth_blockNumber', [], 1), call('eth_nope', [], 2)], {
          'x-request-id': 'a-batch',
        })
        await postRpc(rpc, a.key, call('eth_sendRawTransaction', ['0x02f8deadbeef']), {
          'x-request-id': 'raw-tx',
        })
        await postRpc(rpc, a.key, call('eth_getBalance', [{ signature: '0xsecret', to: '0x1' }, 'latest']), {
          'x-request-id': 'member',
        })
        await postRpc(rpc, a.key, '{"jsonrpc":', { 'x-request-id': 'bad-json' })
        await postRpc(rpc, b.key, call('eth_chainId'), { 'x-request-id': 'b-only' })

        const all = (await listed(a.key)).json
        expect(all.retention_hours).toBe(24)
        const byId = (id: string) => all.requests.filter((r) => r.request_id === id)
        expect(byId('ok-2')[0]).toMatchObject({
          method: 'eth_chainId',
          http_status: 200,
          rpc_code: null,
          network: 'ethereum-devnet',
          surface: 'JSON-RPC',
          key: { id: a.id, name: 'explorer', prefix: a.prefix },
          params: '[]',
        })
        expect(byId('ok-2')[0]?.answer).toContain('"result":"0x7a69"')
        expect(byId('ok-1')).toHaveLength(1)
        expect(byId('bad-method')[0]).toMatchObject({ http_status: 200, rpc_code: -32601, batch_item: null })
        expect(byId('bad-method')[0]?.error).toMatch(/eth_noSuchMethod/)
        const batch = byId('a-batch').sort((x, y) => (x.batch_item ?? 0) - (y.batch_item ?? 0))
        expect(batch.map((r) => [r.method, r.batch_item, r.batch_size, r.rpc_code])).toEqual([
          ['eth_blockNumber', 0, 2, null],
          ['eth_nope', 1, 2, -32601],
        ])
        expect(batch[0]?.answer).toMatch(/^\{"jsonrpc":"2.0","id":1,"result":"0x/)
        expect(byId('raw-tx')[0]?.params).toBe('["[redacted signed transaction: 6 bytes]"]')
        expect(byId('member')[0]?.params).toBe('[{"signature":"[redacted]","to":"0x1"},"latest"]')
        expect(byId('bad-json')[0]).toMatchObject({ http_status: 400, method: '' })
        expect(byId('bad-json')[0]?.error).toMatch(/JSON/)
        // Account A never sees B's request, not even by its id; B sees only its own.
        expect(byId('b-only')).toEqual([])
        expect((await listed(a.key, '?request_id=b-only')).json.requests).toEqual([])
        expect((await listed(b.key)).json.requests.map((r) => r.request_id)).toEqual(['b-only'])

        // Filters: status, method, key.
        const errors = (await listed(a.key, '?status=error')).json.requests.map((r) => r.request_id)
        expect(new Set(errors)).toEqual(new Set(['bad-method', 'a-batch', 'bad-json', 'raw-tx', 'member']))
        expect((await listed(a.key, '?status=-32601&method=eth_nope')).json.requests).toHaveLength(1)
        expect((await listed(a.key, `?key=${b.id}`)).json.requests).toEqual([])
        expect((await listed(a.key, '?status=teapot')).status).toBe(400)

        // Per-key counts: every call (a batch's each), its errors.
        const day = utcDay(Date.now())
        const usage = await keyUsage(storage.db, a.id, day, day)
        const m = new Map(usage.methods.map((x) => [x.method, x]))
        expect(m.get('eth_chainId')).toMatchObject({ calls: 2, errors: 0 })
        expect(usage.days[0]?.calls).toBe(8)
      })

      it('records a request refused because its origin is not on the key list (403), with the reason', async () => {
        const c = await newKey({ origins: ['https://app.example.com'] })
        const refused = await postRpc(rpc, c.key, call('eth_chainId'), {
          origin: 'https://evil.example.net',
          'x-request-id': 'wrong-origin',
        })
        expect(refused.status).toBe(403)
        const ok = await postRpc(rpc, c.key, call('eth_chainId'), { origin: 'https://app.example.com' })
        expect(ok.status).toBe(200)
        // The listing itself comes from no origin: the key's list refuses it too. Read it directly.
        expect((await listed(c.key, '?request_id=wrong-origin')).status).toBe(403)
        const stored = await storage.db
          .selectFrom('request_log')
          .selectAll()
          .where('request_id', '=', 'wrong-origin')
          .execute()
        expect(stored).toHaveLength(1)
        expect(stored[0]).toMatchObject({
          http_status: 403,
          origin: 'https://evil.example.net',
          method: 'eth_chainId',
        })
        expect(stored[0]?.error).toMatch(/origin/i)
      })

      it('prunes recorded requests older than the retention', async () => {
        const before = await storage.db
          .selectFrom('request_log')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirst()
        expect(Number(before?.n)).toBeGreaterThan(0)
        expect(await pruneRequests(storage.db, new Date(Date.now() - 3_600_000), 1000)).toBe(0)
        while ((await pruneRequests(storage.db, new Date(Date.now() + 60_000), 2)) === 2) {}
        const after = await storage.db
          .selectFrom('request_log')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirst()
        expect(Number(after?.n)).toBe(0)
      })
    },
  )
}
