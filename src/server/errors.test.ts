import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeEachStorage, storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

type ErrorBody = { error: { code: string; message: string; status: number } }

describeEachStorage('error format, operations and metrics on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let url: string
  let key: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    url = `${h.baseUrl}/rpc/ethereum/devnet`
    key = await h.createKey({ plan: 'growth' })
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  const expectError = (
    res: Awaited<ReturnType<typeof postRpc>>,
    status: number,
    code: string,
    mention: RegExp,
  ) => {
    expect(res.status).toBe(status)
    const body = res.json as unknown as ErrorBody
    expect(Object.keys(body)).toEqual(['error'])
    expect(body.error.code).toBe(code)
    expect(body.error.status).toBe(status)
    expect(body.error.message).toMatch(mention)
    expect(res.headers.get('x-request-id')).toBeTruthy()
  }

  it('answers malformed JSON with 400 invalid_request naming the problem', async () => {
    expectError(await postRpc(url, key, '{"jsonrpc":"2.0",'), 400, 'invalid_request', /JSON/i)
  })

  it('answers a missing method and non-array params with messages naming the field', async () => {
    expectError(
      await postRpc(url, key, { jsonrpc: '2.0', id: 1, params: [] }),
      400,
      'invalid_request',
      /method/,
    )
    expectError(
      await postRpc(url, key, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: 'x' }),
      400,
      'invalid_request',
      /params/,
    )
    expectError(
      await postRpc(url, key, { jsonrpc: '1.0', id: 1, method: 'eth_chainId', params: [] }),
      400,
      'invalid_request',
      /jsonrpc/,
    )
  })

  it('answers an empty and an oversized batch with 400 naming the bound', async () => {
    expectError(await postRpc(url, key, []), 400, 'invalid_request', /empty/i)
    const big = Array.from({ length: 101 }, (_, i) => call('eth_chainId', [], i))
    expectError(await postRpc(url, key, big), 400, 'invalid_request', /100/)
  })

  it('answers an oversized body with 400 naming the limit', async () => {
    const huge = JSON.stringify(call('eth_call', [{ data: `0x${'00'.repeat(3 * 1024 * 1024)}` }, 'latest']))
    expectError(await postRpc(url, key, huge), 400, 'invalid_request', /5242880-byte/)
  })

  it('answers an unknown network and an unknown route with 404', async () => {
    expectError(
      await postRpc(`${h.baseUrl}/rpc/ethereum/nowhere`, key, call('eth_chainId')),
      404,
      'not_found',
      /ethereum\/nowhere/,
    )
    const res = await fetch(`${h.baseUrl}/no/such/route`, { headers: { 'x-api-key': key } })
    expect(res.status).toBe(404)
    expect(((await res.json()) as ErrorBody).error.code).toBe('not_found')
  })

  it('passes upstream JSON-RPC errors through and refuses unknown methods with -32601', async () => {
    const bad = await postRpc(url, key, call('eth_getBalance', ['0xnothex', 'latest']))
    expect(bad.status).toBe(200)
    expect((bad.json as unknown as { error: { code: number } }).error.code).toBe(-32602)
    const unknown = await postRpc(url, key, call('admin_peers'))
    expect(unknown.json).toMatchObject({ error: { code: -32601 } })
  })

  it('puts the rate-limit headers on 4xx answers to an identified caller', async () => {
    const res = await postRpc(url, key, '{not json')
    expect(res.status).toBe(400)
    expect(res.headers.get('x-ratelimit-limit')).toBe('100')
    expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/)
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/)
  })

  it('serves /health, /ready and Prometheus /metrics with route, status, network, method and CU', async () => {
    expect((await fetch(`${h.halyard.origin}/health`)).status).toBe(200)
    const ready = await fetch(`${h.halyard.origin}/ready`)
    expect(ready.status).toBe(200)
    await postRpc(url, key, call('eth_blockNumber'))
    const metrics = await (await fetch(`${h.halyard.origin}/metrics`)).text()
    expect(metrics).toMatch(
      /halyard_http_requests_total\{[^}]*route="\/v1\/rpc\/:chain\/:network"[^}]*status="200"/,
    )
    expect(metrics).toMatch(/network="ethereum-devnet"|network="ethereum\/devnet"/)
    expect(metrics).toMatch(/method="eth_blockNumber"/)
    expect(metrics).toMatch(/halyard_http_request_duration_seconds_bucket/)
    expect(metrics).toMatch(/halyard_compute_units_total/)
  })
})

describe('the database gone', () => {
  it('answers a key it cannot check with 503 service_unavailable + Retry-After, without internals; a known key is still served', async () => {
    const anvil = await startAnvil()
    const storage = await storageBackends()[0]!.open()
    const h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    try {
      const key = await h.createKey()
      const url = `${h.baseUrl}/rpc/ethereum/devnet`
      expect((await postRpc(url, key, call('eth_chainId'))).status).toBe(200)
      await storage.close() // every key lookup now fails inside the driver
      await new Promise((r) => setTimeout(r, 1100)) // past the one-second auth cache
      const res = await postRpc(url, `halyard_test_${'z'.repeat(32)}`, call('eth_chainId'))
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      const body = res.json as unknown as ErrorBody
      expect(body.error.code).toBe('service_unavailable')
      expect(body.error.status).toBe(503)
      expect(body.error.message).not.toMatch(/pglite|kysely|closed|stack|at /i)
      expect(res.headers.get('x-request-id')).toBeTruthy()
      // Verified a moment ago: served from the stale key window (docs/dependency-failures.md).
      expect((await postRpc(url, key, call('eth_chainId'))).status).toBe(200)
    } finally {
      await h.close().catch(() => {})
      await anvil.stop()
    }
  }, 120_000)
})
