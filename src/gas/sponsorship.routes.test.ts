import { toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  NETWORK,
  type SponsorFixture,
  sponsorBody,
  startDevHalyard,
  startSponsorFixture,
  withSponsorship,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import type { TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { entryPointAbi } from '../aa/contracts.ts'
import type { AccountAbstractionDeployment } from '../devnet/account-abstraction.ts'
import type { Address } from '../types.ts'
import type { SponsorResult } from './sponsor-service.ts'

/**
 * The sponsorship routes on a running Halyard in dev mode: the signer key and both
 * VerifyingPaymasters come from its data dir (as `npm start` has them), policies are managed
 * over HTTP, and the `POST /v1/gas/sponsor` body put into an op passes the EntryPoint's
 * validation in a direct `handleOps`; the settlement poller then books the actual cost.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

describe('gas sponsorship over HTTP', () => {
  let fx: SponsorFixture
  let h: TestHalyard
  let dep: AccountAbstractionDeployment
  let key: string

  const send = async (method: string, url: string, body?: unknown, k = key) => {
    const res = await fetch(`${h.baseUrl}${url}`, {
      method,
      headers: { 'x-api-key': k, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  }

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    ;({ h, dep, key } = await startDevHalyard(fx, 'sponsor-http'))
  }, 120_000)

  afterAll(async () => {
    await h?.close()
    await fx?.close()
  })

  it('creates, lists, reads, updates and deletes a policy', async () => {
    const created = await send('POST', '/gas/policies', {
      name: 'onboarding',
      chain: NETWORK,
      rules: { max_per_user_per_day: 5 },
    })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: 'onboarding', chain: NETWORK, status: 'active' })
    const id = created.json.id as string
    expect(id).toMatch(/^gp_[0-9a-f]{24}$/)

    const list = await send('GET', '/gas/policies')
    expect(list.status).toBe(200)
    expect(list.json).toMatchObject({ page: 1, limit: 25 })
    expect((list.json.policies as { id: string }[]).map((p) => p.id)).toContain(id)

    const one = await send('GET', `/gas/policies/${id}`)
    expect(one.json).toMatchObject({ id, spend: { operations: 0 } })

    const patched = await send('PATCH', `/gas/policies/${id}`, { name: 'paused one', status: 'paused' })
    expect(patched.status).toBe(200)
    expect(patched.json).toMatchObject({ id, name: 'paused one', status: 'paused' })

    expect(await send('DELETE', `/gas/policies/${id}`)).toMatchObject({
      status: 200,
      json: { id, deleted: true },
    })
    const gone = await send('GET', `/gas/policies/${id}`)
    expect(gone.status).toBe(404)
    expect(gone.json).toMatchObject({ error: { code: 'not_found', status: 404 } })
  })

  it('answers an unknown rule key with a 400 naming it', async () => {
    const r = await send('POST', '/gas/policies', { name: 'x', chain: NETWORK, rules: { max_gaz_usd: '1' } })
    expect(r.status).toBe(400)
    expect(r.json).toMatchObject({ error: { code: 'invalid_request', status: 400 } })
    expect((r.json.error as { message: string }).message).toContain('max_gaz_usd')
  })

  it('refuses a key without gas:manage with a 403', async () => {
    const reader = await h.createKey({ scopes: ['data:read'] })
    const body = { name: 'x', chain: NETWORK, rules: {} }
    const r = await send('POST', '/gas/policies', body, reader)
    expect(r.status).toBe(403)
    expect(r.json).toMatchObject({ error: { code: 'forbidden', status: 403 } })
    expect((r.json.error as { message: string }).message).toContain('gas:manage')
    expect((await send('POST', '/gas/sponsor', { chain: NETWORK }, reader)).status).toBe(403)
    const pm = { jsonrpc: '2.0', id: 1, method: 'pm_getPaymasterStubData', params: [] }
    expect((await send('POST', '/paymaster/ethereum/devnet', pm, reader)).status).toBe(403)
  })

  it('returns the sponsorship body; put into the op it passes on-chain and the spend settles', async () => {
    const created = await send('POST', '/gas/policies', {
      name: 'mint',
      chain: NETWORK,
      rules: { max_per_user_per_day: 3, allowed_contracts: [fx.token] },
    })
    const id = created.json.id as string
    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)

    const r = await send('POST', '/gas/sponsor', sponsorBody(op, id))
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      paymaster: dep.config.paymaster,
      // abi.encode(validUntil, validAfter) then the 65-byte signature
      paymasterData: expect.stringMatching(/^0x[0-9a-f]{258}$/),
      paymasterVerificationGasLimit: expect.stringMatching(/^0x[0-9a-f]+$/),
      paymasterPostOpGasLimit: expect.stringMatching(/^0x[0-9a-f]+$/),
    })
    expect(r.json).toHaveProperty('sponsored_gas_usd')

    const deposit = () =>
      fx.client.readContract({
        address: fx.aa.entryPoints.v07,
        abi: entryPointAbi,
        functionName: 'balanceOf',
        args: [dep.config.paymaster as Address],
      })
    const before = await deposit()
    const signed = await acct.sign(
      withSponsorship(op, r.json as unknown as Parameters<typeof withSponsorship>[1]),
    )
    const receipt = await fx.handleOps(signed)
    expect(receipt.status).toBe('success')
    const cost = before - (await deposit())
    expect(cost).toBeGreaterThan(0n)
    expect(await fx.client.getBalance({ address: acct.address })).toBe(0n)

    // The settlement poller (a background task of the server) books the actual cost.
    const spend = await until('the sponsorship to settle', async () => {
      const s = (await send('GET', `/gas/policies/${id}`)).json.spend as { settled_operations: number }
      return s.settled_operations === 1 ? s : null
    })
    expect(spend).toMatchObject({ operations: 1, settled_wei: cost.toString(), reserved_wei: '0' })
  })

  it('reports the paymaster deposits on /ready', async () => {
    const res = await fetch(`${h.halyard.origin}/ready`)
    const body = (await res.json()) as { checks: Record<string, string> }
    expect(body.checks[`paymaster deposit ${NETWORK}`]).toBe('ok')
    // …and on /metrics: the deposit (native units) and whether it is below the floor.
    const metrics = await (await fetch(`${h.halyard.origin}/metrics`)).text()
    const below = metrics.match(
      /^halyard_paymaster_deposit_below_floor\{network="([^"]+)",version="v07"[^}]*\} (\S+)$/m,
    )
    expect(below?.slice(1)).toEqual([NETWORK, '0'])
    const native = metrics.match(/^halyard_paymaster_deposit_native\{[^}]*version="v07"[^}]*\} (\S+)$/m)
    expect(Number(native?.[1])).toBeGreaterThan(0)
  })

  it('serves ERC-7677 on the shared JSON-RPC endpoint: stub, then data that passes on-chain', async () => {
    const id = (await send('POST', '/gas/policies', { name: '7677', chain: NETWORK, rules: {} })).json
      .id as string
    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)
    const pm = async (method: string, o: typeof op) => {
      const params = [
        sponsorBody(o, id).user_operation,
        fx.aa.entryPoints.v07,
        toHex(fx.anvil.chainId),
        { policy_id: id },
      ]
      const r = await send('POST', '/paymaster/ethereum/devnet', { jsonrpc: '2.0', id: 7, method, params })
      expect(r.status).toBe(200)
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 7 })
      return r.json.result as SponsorResult
    }
    const stub = await pm('pm_getPaymasterStubData', op)
    expect(stub).toMatchObject({ paymaster: dep.config.paymaster, isFinal: false })
    const stubbed = withSponsorship(op, stub)
    const data = await pm('pm_getPaymasterData', stubbed)
    expect(data.paymaster).toBe(dep.config.paymaster)
    const receipt = await fx.handleOps(
      await acct.sign(withSponsorship(op, { ...stub, paymasterData: data.paymasterData })),
    )
    expect(receipt.status).toBe('success')

    const unknown = await send('POST', '/paymaster/ethereum/devnet', {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_chainId',
    })
    expect(unknown.json).toMatchObject({ error: { code: -32601 } })
  })

  it('names a bad sponsor body field with a 400', async () => {
    const r = await send('POST', '/gas/sponsor', { chain: NETWORK, policy_id: 'gp_x' })
    expect(r.status).toBe(400)
    expect((r.json.error as { message: string }).message).toContain('user_operation')
  })

  it('names a malformed policy_id or oversized chain with a 400 on both transports', async () => {
    const op = await fx.mintOp(await TestAccount.create(fx, 'v07'))
    for (const bad of ['gp_\u0000', `gp_${'0'.repeat(100_000)}`, 42]) {
      const r = await send('POST', '/gas/sponsor', { ...sponsorBody(op, 'x'), policy_id: bad })
      expect(r.status).toBe(400)
      expect(r.json).toMatchObject({ error: { code: 'invalid_request', status: 400 } })
      expect((r.json.error as { message: string }).message).toContain('policy_id')
    }
    const longChain = { ...sponsorBody(op, 'gp_0123456789abcdef01234567'), chain: 'x'.repeat(100_000) }
    for (const [url, body] of [
      ['/gas/sponsor', longChain],
      ['/gas/policies', { name: 'n', chain: 'x'.repeat(100_000), rules: {} }],
    ] as const) {
      const r = await send('POST', url, body)
      expect(r.status).toBe(400)
      expect((r.json.error as { message: string }).message).toMatch(/^body: chain: .{0,200}$/)
    }
    const { user_operation } = sponsorBody(op, 'x')
    const pm = {
      jsonrpc: '2.0',
      id: 1,
      method: 'pm_getPaymasterData',
      params: [user_operation, fx.aa.entryPoints.v07, toHex(fx.anvil.chainId), { policy_id: 'gp_\u0000' }],
    }
    const rpc = await send('POST', '/paymaster/ethereum/devnet', pm)
    expect(rpc.json).toMatchObject({ error: { code: -32602, message: expect.stringContaining('policy_id') } })
  })
})
