import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  NETWORK,
  type SponsorFixture,
  sponsorBody,
  startDevHalyard,
  startSponsorFixture,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { call, postRpc, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'

/**
 * The operator's ceilings and the dev price on a running Halyard in dev mode without `--demo`
 * (as plain `npm start` runs): a free account's 9.06 ETH operation is refused on every path that
 * signs (REST, ERC-7677 and the Alchemy root) with the ceiling named, and a `max_gas_usd`
 * policy prices native gas at the dev price.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

const GWEI = 1_000_000_000n
/** A v0.7 op of a fresh sender whose maximum cost is 9.06 ETH (9,060,000,000 gas at 1 gwei). */
const nineEth = () => ({
  sender: privateKeyToAccount(generatePrivateKey()).address.toLowerCase(),
  nonce: '0x0',
  callData: '0x',
  callGasLimit: toHex(9_060_000_000n - 210_000n),
  verificationGasLimit: toHex(100_000),
  preVerificationGas: toHex(50_000),
  maxFeePerGas: toHex(GWEI),
  maxPriorityFeePerGas: toHex(GWEI),
})

describe('sponsorship ceilings over HTTP (dev mode without --demo)', () => {
  let fx: SponsorFixture
  let h: TestHalyard
  let key: string

  const send = async (method: string, url: string, body: unknown, k = key) => {
    const res = await fetch(`${h.baseUrl}${url}`, {
      method,
      headers: { 'x-api-key': k, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  }
  const policy = async (rules: unknown, k = key) =>
    (await send('POST', '/gas/policies', { name: 'p', chain: NETWORK, rules }, k)).json.id as string

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    ;({ h, key } = await startDevHalyard(fx, 'sponsor-ceilings'))
  }, 120_000)
  afterAll(async () => {
    await h?.close()
    await fx?.close()
  })

  it('a max_gas_usd policy sponsors at the dev price of native gas (3000 USD)', async () => {
    const id = await policy({ max_gas_usd: '100' })
    const op = await fx.mintOp(await TestAccount.create(fx, 'v07'))
    const r = await send('POST', '/gas/sponsor', sponsorBody(op, id))
    expect(r.status).toBe(200)
    const row = await fx.storage.db
      .selectFrom('gas_sponsorships')
      .select(['max_cost_wei', 'native_price_usd'])
      .where('id', '=', r.json.sponsorship_id as string)
      .executeTakeFirstOrThrow()
    expect(Number(row.native_price_usd)).toBe(3000)
    expect(Number(r.json.sponsored_gas_usd)).toBeCloseTo(Number(row.max_cost_wei) * 3000e-18, 9)
  })

  it("a free account's 9.06 ETH operation is refused naming the ceiling, on every path that signs", async () => {
    const free = await h.createKey({ plan: 'free' })
    const id = await policy({}, free)
    const message =
      "ceiling_per_operation: the operation may cost up to 9060000000000000000 wei (9.06 ETH); the operator's ceiling for the free plan on ethereum-devnet is 10000000000000000 wei (0.01 ETH) per operation"

    const rest = await send(
      'POST',
      '/gas/sponsor',
      { chain: NETWORK, policy_id: id, user_operation: nineEth() },
      free,
    )
    expect(rest).toEqual({ status: 403, json: { error: { code: 'forbidden', status: 403, message } } })

    const params = [nineEth(), fx.aa.entryPoints.v07, toHex(fx.anvil.chainId), { policy_id: id }]
    for (const method of ['pm_getPaymasterStubData', 'pm_getPaymasterData']) {
      const rpc = await send('POST', '/paymaster/ethereum/devnet', call(method, params), free)
      expect(rpc.json.error).toMatchObject({ message })
    }
    const root = `${h.baseUrl}/alchemy/eth-devnet/v2/${free}`
    const { sender, nonce, callData, callGasLimit, verificationGasLimit, preVerificationGas } = nineEth()
    const alchemy = await postRpc(
      root,
      undefined,
      call('alchemy_requestGasAndPaymasterAndData', [
        {
          policyId: id,
          entryPoint: fx.aa.entryPoints.v07,
          userOperation: { sender, nonce, callData, callGasLimit, verificationGasLimit, preVerificationGas },
          dummySignature: `0x${'f'.repeat(31)}0${'0'.repeat(32)}7${'a'.repeat(63)}1c`,
          overrides: { maxFeePerGas: toHex(GWEI), maxPriorityFeePerGas: toHex(GWEI) },
        },
      ]),
    )
    expect((alchemy.json.error as { message: string }).message).toContain('ceiling_per_operation')
    const rows = await fx.storage.db
      .selectFrom('gas_sponsorships')
      .select('id')
      .where('policy_id', '=', id)
      .execute()
    expect(rows).toEqual([])
  })

  it('a reserved-at-once refusal is a 429 with Retry-After', async () => {
    const free = await h.createKey({ plan: 'free' })
    const id = await policy({}, free)
    const op = (i: number) => ({
      ...nineEth(),
      nonce: toHex(i),
      callGasLimit: toHex(10_000_000n - 210_000n),
    })
    // 0.01 ETH each; the free plan reserves 0.05 at once: five pass, the sixth is refused.
    for (let i = 0; i < 5; i++)
      expect(
        (await send('POST', '/gas/sponsor', { chain: NETWORK, policy_id: id, user_operation: op(i) }, free))
          .status,
      ).toBe(200)
    const res = await fetch(`${h.baseUrl}/gas/sponsor`, {
      method: 'POST',
      headers: { 'x-api-key': free, 'content-type': 'application/json' },
      body: JSON.stringify({ chain: NETWORK, policy_id: id, user_operation: op(5) }),
    })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('rate_limited')
    expect(body.error.message).toMatch(
      /^ceiling_reserved_at_once: the account has 50000000000000000 wei \(0\.05 ETH\) reserved/,
    )
  })
})
