import { randomBytes } from 'node:crypto'
import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  NETWORK,
  refusal,
  type SponsorFixture,
  sponsorBody,
  startSponsorFixture,
  withSponsorship,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { describeEachStorage, type StorageBackend } from '../../test/helpers/storage.ts'
import { describeZodError } from '../common/validation.ts'
import { parseConfig } from '../server/config-schema.ts'
import type { Address } from '../types.ts'
import { SponsorshipRefused } from './policy-checks.ts'
import { DEFAULT_CEILINGS, planCeilings } from './sponsor-ceilings.ts'
import { sponsorshipConfigSchema } from './sponsor-config.ts'
import type { SponsorService } from './sponsor-service.ts'

/**
 * The operator's ceilings over every policy (sponsor-ceilings.ts): a free account's policy with
 * `rules: {}` cannot take the shared deposit; per-day and reserved-at-once hold across an
 * account's policies and under concurrency; settlement gives reserved capacity back; enterprise
 * is unlimited by default; per-account overrides apply. Ops are priced at 1 gwei per gas, so an
 * op's maximum cost is its total gas (all limits plus the paymaster's 60,000) in gwei.
 */

const GWEI = 1_000_000_000n
const ETH = 10n ** 18n
const PM_GAS = 60_000n
const newSender = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

/** An op whose maximum cost is `costWei` (at 1 gwei per gas). */
const opCosting = (costWei: bigint, sender = newSender(), nonce = 0) => ({
  sender,
  nonce: toHex(nonce),
  callData: '0x',
  callGasLimit: toHex(costWei / GWEI - 150_000n - PM_GAS),
  verificationGasLimit: toHex(100_000),
  preVerificationGas: toHex(50_000),
  maxFeePerGas: toHex(GWEI),
  maxPriorityFeePerGas: toHex(GWEI),
})

function suite(backend: StorageBackend) {
  let fx: SponsorFixture

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const account = async (plan: string) => {
    const id = `acct_${randomBytes(6).toString('hex')}`
    await fx.storage.db
      .insertInto('accounts')
      .values({ id, email: `${id}@test.local`, plan, limit_rps: null, limit_rpd: null, limit_cups: null })
      .execute()
    return id
  }
  const policy = async (accountId: string) =>
    (await fx.policyService().create(accountId, { name: 'open', chain: NETWORK, rules: {} })).id
  const sponsor = (svc: SponsorService, accountId: string, policyId: string, op: unknown) =>
    svc.sponsor({ accountId }, { chain: NETWORK, policy_id: policyId, user_operation: op })
  const openRows = async (policyId: string) =>
    (
      await fx.storage.db
        .selectFrom('gas_sponsorships')
        .select('id')
        .where('policy_id', '=', policyId)
        .execute()
    ).length

  it('a free account with rules {} cannot reserve 9.06 ETH: the refusal names the ceiling', async () => {
    const svc = fx.sponsorService({ spec: { ceilings: DEFAULT_CEILINGS, nativeSymbol: 'ETH' } })
    const acct = await account('free')
    const id = await policy(acct)
    const op = opCosting(9_060_000_000n * GWEI)
    const err = await refusal(sponsor(svc, acct, id, op))
    expect(err).toBeInstanceOf(SponsorshipRefused)
    expect(err.rule).toBe('ceiling_per_operation')
    expect(err.status).toBe(403)
    expect(err.message).toBe(
      `ceiling_per_operation: the operation may cost up to 9060000000000000000 wei (9.06 ETH); the operator's ceiling for the free plan on ${NETWORK} is 10000000000000000 wei (0.01 ETH) per operation`,
    )
    // ERC-7677 (and alchemy_requestGasAndPaymasterAndData, which calls it) answer the same.
    const params = [op, fx.aa.entryPoints.v07, toHex(fx.anvil.chainId), { policy_id: id }]
    expect((await refusal(svc.getPaymasterData({ accountId: acct }, NETWORK, params))).rule).toBe(
      'ceiling_per_operation',
    )
    expect((await refusal(svc.getPaymasterStubData({ accountId: acct }, NETWORK, params))).rule).toBe(
      'ceiling_per_operation',
    )
    expect(await openRows(id)).toBe(0)
    // Within the ceiling the same policy signs.
    await sponsor(svc, acct, id, opCosting(ETH / 100n))
    expect(await openRows(id)).toBe(1)
  })

  it('per day: the account is refused past the ceiling across its policies, with Retry-After to midnight UTC', async () => {
    const svc = fx.sponsorService({
      spec: {
        ceilings: planCeilings({ free: { perDay: '0.02', reservedAtOnce: null } }),
        nativeSymbol: 'ETH',
      },
    })
    const acct = await account('free')
    const [a, b] = [await policy(acct), await policy(acct)]
    for (let i = 0; i < 5; i++) await sponsor(svc, acct, i % 2 ? a : b, opCosting(4_000_000n * GWEI))
    const err = await refusal(sponsor(svc, acct, a, opCosting(4_000_000n * GWEI)))
    expect(err.rule).toBe('ceiling_per_day')
    expect(err.status).toBe(429)
    expect(err.message).toContain('has sponsored 20000000000000000 wei (0.02 ETH)')
    expect(err.message).toContain('is 20000000000000000 wei (0.02 ETH) per day')
    const retry = Number(err.headers['retry-after'])
    expect(retry).toBeGreaterThan(0)
    expect(retry).toBeLessThanOrEqual(86_400)
    // Another account of the same plan has its own day.
    const other = await account('free')
    await sponsor(svc, other, await policy(other), opCosting(4_000_000n * GWEI))
  })

  it('reserved at once: two concurrent requests on two policies that together exceed it, exactly one passes', async () => {
    const ceilings = planCeilings({ free: { reservedAtOnce: '0.006' } })
    // Two services: two batchers, so the two requests decide in two transactions at once.
    const [s1, s2] = [fx.sponsorService({ spec: { ceilings } }), fx.sponsorService({ spec: { ceilings } })]
    for (let round = 0; round < 3; round++) {
      const acct = await account('free')
      const [a, b] = [await policy(acct), await policy(acct)]
      const results = await Promise.allSettled([
        sponsor(s1, acct, a, opCosting(4_000_000n * GWEI)),
        sponsor(s2, acct, b, opCosting(4_000_000n * GWEI)),
      ])
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      const refused = results.find((r) => r.status === 'rejected')?.reason as SponsorshipRefused
      expect(refused.rule).toBe('ceiling_reserved_at_once')
      expect(refused.status).toBe(429)
      expect(refused.message).toContain('has 4000000000000000 wei (0.004 native) reserved')
      // Retry-After: when the open reservation expires (the default 600 s).
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500)
    }
    // Many at once: a ceiling of 0.02 holds five of 0.004 and not six.
    const acct = await account('free')
    const policies = [await policy(acct), await policy(acct), await policy(acct)]
    const wide = planCeilings({ free: { reservedAtOnce: '0.02', perDay: null } })
    const svcs = policies.map(() => fx.sponsorService({ spec: { ceilings: wide } }))
    const many = await Promise.allSettled(
      Array.from({ length: 24 }, (_, i) =>
        sponsor(svcs[i % 3] as SponsorService, acct, policies[i % 3] as string, opCosting(4_000_000n * GWEI)),
      ),
    )
    expect(many.filter((r) => r.status === 'fulfilled')).toHaveLength(5)
  })

  it('settlement gives reserved-at-once capacity back; the day keeps the actual cost', async () => {
    const svc = fx.sponsorService({ spec: { ceilings: DEFAULT_CEILINGS } })
    const settlement = fx.settlement(svc)
    const acct = await account('free')
    const id = await policy(acct)
    const first = await TestAccount.create(fx, 'v07')
    const op1 = await fx.mintOp(first)
    const r1 = await svc.sponsor({ accountId: acct }, sponsorBody(op1, id))
    const reserved = BigInt((await svc.store.sponsorship(r1.sponsorship_id))?.max_cost_wei ?? '0')
    // Per-account ceilings (wei): room for one such op at once.
    await fx.storage.db
      .insertInto('gas_account_ceilings')
      .values({
        account_id: acct,
        network: NETWORK,
        per_operation_wei: null,
        per_day_wei: (reserved * 10n).toString(),
        reserved_wei: ((reserved * 3n) / 2n).toString(),
      })
      .execute()
    const second = await TestAccount.create(fx, 'v07')
    const op2 = await fx.mintOp(second)
    expect((await refusal(svc.sponsor({ accountId: acct }, sponsorBody(op2, id)))).rule).toBe(
      'ceiling_reserved_at_once',
    )

    const receipt = await fx.handleOps(await first.sign(withSponsorship(op1, r1)))
    expect(receipt.status).toBe('success')
    while (await settlement.pollOnce(NETWORK)) {}
    expect((await svc.store.sponsorship(r1.sponsorship_id))?.state).toBe('settled')
    await svc.sponsor({ accountId: acct }, sponsorBody(op2, id))
    const day = await fx.storage.db
      .selectFrom('gas_account_days')
      .select('spend_wei')
      .where('account_id', '=', acct)
      .executeTakeFirstOrThrow()
    const actual = BigInt((await svc.store.sponsorship(r1.sponsorship_id))?.actual_cost_wei ?? '0')
    const open = BigInt(
      (
        await fx.storage.db
          .selectFrom('gas_sponsorships')
          .select('max_cost_wei')
          .where('policy_id', '=', id)
          .where('state', '=', 'reserved')
          .executeTakeFirstOrThrow()
      ).max_cost_wei,
    )
    expect(BigInt(day.spend_wei)).toBe(actual + open)
  })

  it('expiry releases reserved-at-once capacity and takes the maximum out of the day', async () => {
    const svc = fx.sponsorService({
      spec: { ceilings: planCeilings({ free: { reservedAtOnce: '0.006' } }) },
    })
    const acct = await account('free')
    const id = await policy(acct)
    await sponsor(svc, acct, id, opCosting(4_000_000n * GWEI))
    expect((await refusal(sponsor(svc, acct, id, opCosting(4_000_000n * GWEI)))).rule).toBe(
      'ceiling_reserved_at_once',
    )
    await svc.store.releaseExpired(NETWORK, Math.floor(Date.now() / 1000) + 3600)
    await sponsor(svc, acct, id, opCosting(4_000_000n * GWEI))
    const day = await fx.storage.db
      .selectFrom('gas_account_days')
      .select('spend_wei')
      .where('account_id', '=', acct)
      .executeTakeFirstOrThrow()
    expect(BigInt(day.spend_wei)).toBe(4_000_000n * GWEI)
  })

  it('deleting a policy does not give its open reservations back: they can still be mined', async () => {
    const svc = fx.sponsorService({ spec: { ceilings: planCeilings({ free: { reservedAtOnce: '0.006' } }) } })
    const acct = await account('free')
    const first = await policy(acct)
    await sponsor(svc, acct, first, opCosting(4_000_000n * GWEI))
    await fx.policyService().delete({ accountId: acct }, first)
    const err = await refusal(sponsor(svc, acct, await policy(acct), opCosting(4_000_000n * GWEI)))
    expect(err.rule).toBe('ceiling_reserved_at_once')
  })

  it('enterprise is unlimited by default; a per-account ceiling binds it; growth is ten times free', async () => {
    const svc = fx.sponsorService({ spec: { ceilings: DEFAULT_CEILINGS } })
    const ent = await account('enterprise')
    const id = await policy(ent)
    await sponsor(svc, ent, id, opCosting(9_060_000_000n * GWEI))
    await fx.storage.db
      .insertInto('gas_account_ceilings')
      .values({
        account_id: ent,
        network: NETWORK,
        per_operation_wei: ETH.toString(),
        per_day_wei: null,
        reserved_wei: null,
      })
      .execute()
    const err = await refusal(sponsor(svc, ent, id, opCosting(2n * ETH)))
    expect(err.rule).toBe('ceiling_per_operation')
    expect(err.message).toContain('the enterprise plan')
    const growth = await account('growth')
    const g = await policy(growth)
    await sponsor(svc, growth, g, opCosting(ETH / 20n))
    expect((await refusal(sponsor(svc, growth, g, opCosting(ETH / 5n)))).rule).toBe('ceiling_per_operation')
    // An account without a row (deleted meanwhile) is held to the free plan's ceilings.
    const ghost = `acct_${randomBytes(6).toString('hex')}`
    const gp = await policy(ghost)
    expect((await refusal(sponsor(svc, ghost, gp, opCosting(ETH / 50n)))).rule).toBe('ceiling_per_operation')
  })
}

describeEachStorage('operator sponsorship ceilings on $name', (backend) => {
  suite(backend)
})

describe('sponsorship ceilings config', () => {
  it('defaults per plan, keys not given keep them, null is unlimited', () => {
    expect(planCeilings(undefined)).toEqual(DEFAULT_CEILINGS)
    expect(DEFAULT_CEILINGS.free).toEqual({
      perOperationWei: 10n ** 16n,
      perDayWei: 10n ** 17n,
      reservedAtOnceWei: 5n * 10n ** 16n,
    })
    const cfg = sponsorshipConfigSchema.parse({
      ceilings: { growth: { perDay: '2.5', reservedAtOnce: null }, enterprise: { perOperation: '1' } },
    })
    const c = planCeilings(cfg.ceilings)
    expect(c.growth).toEqual({
      perOperationWei: 10n ** 17n,
      perDayWei: 25n * 10n ** 17n,
      reservedAtOnceWei: null,
    })
    expect(c.enterprise.perOperationWei).toBe(ETH)
    expect(c.free).toEqual(DEFAULT_CEILINGS.free)
  })

  it('the config file names the network, plan and key of a bad ceiling', () => {
    const net = {
      chain: 'ethereum',
      network: 'devnet',
      kind: 'evm',
      chainId: 31337,
      upstreams: [{ url: 'http://127.0.0.1:8545' }],
    }
    expect(() =>
      parseConfig({ networks: [{ ...net, sponsorship: { ceilings: { free: { perDay: '1e3' } } } }] }),
    ).toThrow(
      /invalid config: networks\[0\]\.sponsorship\.ceilings\.free\.perDay: must be a decimal string in native units/,
    )
    const ok = parseConfig({
      networks: [{ ...net, sponsorship: { ceilings: { growth: { perDay: null } } } }],
    })
    expect(planCeilings(ok.networks[0]?.sponsorship?.ceilings).growth.perDayWei).toBeNull()
  })

  it.each([
    [{ free: { perDay: '-1' } }, 'ceilings.free.perDay: must be a decimal string in native units'],
    [{ free: { perDay: 0.1 } }, 'ceilings.free.perDay:'],
    [{ free: { perOperation: '0.0000000000000000001' } }, 'ceilings.free.perOperation:'],
    [{ free: { perWeek: '1' } }, 'perWeek'],
    [{ gold: { perDay: '1' } }, 'gold'],
  ])('bad config %j names the field', (ceilings, named) => {
    const r = sponsorshipConfigSchema.safeParse({ ceilings })
    expect(r.success).toBe(false)
    if (!r.success) expect(describeZodError(r.error)).toContain(named)
  })
})
