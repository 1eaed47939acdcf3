import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  ACCOUNT,
  NETWORK,
  type SponsorFixture,
  startSponsorFixture,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { serviceUrl } from '../../test/helpers/services.ts'
import { describeEachStorage, POSTGRES_ONLY, type StorageBackend } from '../../test/helpers/storage.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'
import { SponsorshipRefused } from './policy-checks.ts'
import type { PolicyRules } from './policy-rules.ts'
import type { SponsorService } from './sponsor-service.ts'

/**
 * A limit of 5 holds against 50 requests at once: the decision and the reservation share one
 * transaction under the policy's row lock, with and without batching, and across two service
 * instances (separate connection pools) on one PostgreSQL.
 */

const newSender = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const op = (sender: Address, nonce = 0) => ({
  sender,
  nonce: toHex(nonce),
  callData: '0x',
  callGasLimit: toHex(100_000),
  verificationGasLimit: toHex(100_000),
  preVerificationGas: toHex(50_000),
  maxFeePerGas: toHex(1_000_000_000),
  maxPriorityFeePerGas: toHex(1_000_000_000),
})

async function race(
  services: readonly SponsorService[],
  policyId: string,
  n: number,
  sender: (i: number) => Address,
): Promise<{ signed: number; refusedBy: Set<string> }> {
  const results = await Promise.allSettled(
    Array.from({ length: n }, (_, i) =>
      (services[i % services.length] as SponsorService).sponsor(
        { accountId: ACCOUNT },
        {
          chain: NETWORK,
          policy_id: policyId,
          user_operation: op(sender(i), i),
        },
      ),
    ),
  )
  const refusedBy = new Set<string>()
  for (const r of results) {
    if (r.status === 'rejected') {
      if (!(r.reason instanceof SponsorshipRefused)) throw r.reason
      refusedBy.add(r.reason.rule)
    }
  }
  return { signed: results.filter((r) => r.status === 'fulfilled').length, refusedBy }
}

function suite(backend: StorageBackend) {
  let fx: SponsorFixture

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const policy = async (rules: PolicyRules) =>
    (await fx.policyService().create(ACCOUNT, { name: 'race', chain: NETWORK, rules })).id

  const rows = async (policyId: string) =>
    (
      await fx.storage.db
        .selectFrom('gas_sponsorships')
        .select('id')
        .where('policy_id', '=', policyId)
        .execute()
    ).length

  it.each([
    ['batched', 64],
    ['one request per transaction', 1],
  ])('max_operations 5: 50 parallel requests sign exactly 5 (%s)', async (_, maxBatch) => {
    const svc = fx.sponsorService({ maxBatch })
    const id = await policy({ max_operations: 5 })
    const r = await race([svc], id, 50, () => newSender())
    expect(r).toEqual({ signed: 5, refusedBy: new Set(['max_operations']) })
    expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend.operations).toBe(5)
    expect(await rows(id)).toBe(5)
  })

  it('max_per_user_per_day 5: 50 parallel requests of one sender sign exactly 5', async () => {
    const svc = fx.sponsorService({ maxBatch: 1 })
    const id = await policy({ max_per_user_per_day: 5 })
    const sender = newSender()
    const r = await race([svc], id, 50, () => sender)
    expect(r).toEqual({ signed: 5, refusedBy: new Set(['max_per_user_per_day']) })
  })

  it('max_spend_usd: 50 parallel requests never reserve past the total', async () => {
    const svc = fx.sponsorService()
    // Each op may cost 310,000 gwei ($0.62 at $2000): $3.10 holds five, not six.
    const id = await policy({ max_spend_usd: '3.10' })
    const r = await race([svc], id, 50, () => newSender())
    expect(r).toEqual({ signed: 5, refusedBy: new Set(['max_spend_usd']) })
    expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend.reserved_usd).toBe('3.1')
  })
}

describeEachStorage('concurrent sponsorship on $name', (backend) => {
  suite(backend)
})

describeEachStorage(
  'two service instances on one $name',
  (backend) => {
    let fx: SponsorFixture
    let second: Storage

    beforeAll(async () => {
      fx = await startSponsorFixture(backend)
      second = await openStorage({
        databaseUrl: serviceUrl('DATABASE_URL'),
        schema: fx.storage.schema,
        poolSize: 5,
      })
    }, 120_000)
    afterAll(async () => {
      await second?.close()
      await fx?.close()
    })

    it.each([
      ['batched', 64],
      ['one request per transaction', 1],
    ])('max_operations 5: 50 requests split over both sign exactly 5 (%s)', async (_, maxBatch) => {
      const a = fx.sponsorService({ maxBatch })
      const b = fx.sponsorService({ maxBatch, storage: second })
      const id = (
        await fx
          .policyService()
          .create(ACCOUNT, { name: 'two', chain: NETWORK, rules: { max_operations: 5 } })
      ).id
      const r = await race([a, b], id, 50, () => newSender())
      expect(r).toEqual({ signed: 5, refusedBy: new Set(['max_operations']) })
      const sender = newSender()
      const perDay = (
        await fx
          .policyService()
          .create(ACCOUNT, { name: 'two', chain: NETWORK, rules: { max_per_user_per_day: 5 } })
      ).id
      expect(await race([a, b], perDay, 50, () => sender)).toEqual({
        signed: 5,
        refusedBy: new Set(['max_per_user_per_day']),
      })
    })
  },
  POSTGRES_ONLY,
)
