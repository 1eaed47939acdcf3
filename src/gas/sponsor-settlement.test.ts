import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  ACCOUNT,
  NETWORK,
  type SponsorFixture,
  sponsorBody,
  startSponsorFixture,
  withSponsorship,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { entryPointAbi } from '../aa/contracts.ts'
import type { RawLog } from '../bundler/chain.ts'
import type { EntryPointVersion } from '../bundler/types.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { SponsorService } from './sponsor-service.ts'
import type { SponsorSettlement } from './sponsor-settlement.ts'

/**
 * Spend accounting on the devnet: a reservation is settled to the actual cost from the
 * UserOperationEvent whose paymaster is ours (once, however often the event is fed in), and
 * released when its signature expired unused.
 */
describe.each(storageBackends())('sponsorship settlement on $name', (backend) => {
  let fx: SponsorFixture
  let svc: SponsorService
  let settlement: SponsorSettlement

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    svc = fx.sponsorService()
    settlement = fx.settlement(svc)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const policy = async (rules: Record<string, unknown> = {}) =>
    (await fx.policyService().create(ACCOUNT, { name: 'settle', chain: NETWORK, rules })).id
  const deposit = (version: EntryPointVersion) =>
    fx.client.readContract({
      address: fx.aa.entryPoints[version],
      abi: entryPointAbi,
      functionName: 'balanceOf',
      args: [version === 'v07' ? fx.aa.paymaster : fx.paymasterV06],
    })
  const pollToHead = async () => {
    while (await settlement.pollOnce(NETWORK)) {}
  }

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: mined op settles to the actual cost; the deposit falls by it; the account pays nothing',
    async (version) => {
      const id = await policy()
      const acct = await TestAccount.create(fx, version)
      const op = await fx.mintOp(acct)
      const r = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, id))
      expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend).toMatchObject({
        operations: 1,
        settled_operations: 0,
        reserved_usd: r.sponsored_gas_usd,
      })
      const before = await deposit(version)
      const receipt = await fx.handleOps(await acct.sign(withSponsorship(op, r)))
      const cost = before - (await deposit(version))
      expect(cost).toBeGreaterThan(0n)
      expect(await fx.client.getBalance({ address: acct.address })).toBe(0n)
      await pollToHead()
      const row = await svc.store.sponsorship(r.sponsorship_id)
      expect(row).toMatchObject({ state: 'settled', actual_cost_wei: cost.toString(), success: true })
      expect(row?.tx_hash).toBe(receipt.transactionHash)
      const spend = (await fx.policyService().get({ accountId: ACCOUNT }, id)).spend
      expect(spend).toMatchObject({
        operations: 1,
        settled_operations: 1,
        reserved_usd: '0',
        reserved_wei: '0',
        settled_wei: cost.toString(),
      })
      // At the price the signature was made with ($2000 per ETH).
      expect(Number(spend.settled_usd)).toBeCloseTo(Number(cost) * 2000 * 1e-18, 12)
      expect(spend.total_usd).toBe(spend.settled_usd)
      // The receipt's logs fed in again (the bundler or indexer path) change nothing.
      expect(await settlement.settleLogs(NETWORK, receipt.logs as unknown as RawLog[])).toEqual([
        'already-settled',
      ])
      expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend).toEqual(spend)
    },
  )

  it('two signatures for one op: the mined one settles, the other is released (its nonce is used)', async () => {
    const id = await policy()
    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)
    const first = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, id))
    const second = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, id))
    expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend.operations).toBe(2)
    await fx.handleOps(await acct.sign(withSponsorship(op, first)))
    await pollToHead()
    expect((await svc.store.sponsorship(first.sponsorship_id))?.state).toBe('settled')
    expect((await svc.store.sponsorship(second.sponsorship_id))?.state).toBe('released')
    expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend).toMatchObject({
      operations: 1,
      settled_operations: 1,
      reserved_wei: '0',
    })
  })

  it('the poller settles by itself (under its advisory lock on PostgreSQL)', async () => {
    const id = await policy()
    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)
    const r = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, id))
    settlement.start()
    try {
      await fx.handleOps(await acct.sign(withSponsorship(op, r)))
      await until(
        'the poller settles the op',
        async () => (await svc.store.sponsorship(r.sponsorship_id))?.state === 'settled',
      )
    } finally {
      await settlement.stop()
    }
  })

  // Last: it moves the devnet's clock ahead of the wall clock.
  it('an unused signature is released once a block is past its validUntil; the limit frees up', async () => {
    const id = await policy({ max_operations: 1, sponsorship_expiry_seconds: 30 })
    const acct = await TestAccount.create(fx, 'v07')
    const r = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(await fx.mintOp(acct), id))
    await expect(svc.sponsor({ accountId: ACCOUNT }, sponsorBody(await fx.mintOp(acct), id))).rejects.toThrow(
      /max_operations/,
    )
    await pollToHead()
    expect((await svc.store.sponsorship(r.sponsorship_id))?.state).toBe('reserved')
    await rpc(fx.anvil.url, 'evm_increaseTime', [120])
    await rpc(fx.anvil.url, 'evm_mine', [])
    await pollToHead()
    expect((await svc.store.sponsorship(r.sponsorship_id))?.state).toBe('released')
    expect((await fx.policyService().get({ accountId: ACCOUNT }, id)).spend).toMatchObject({
      operations: 0,
      reserved_usd: '0',
      reserved_wei: '0',
    })
    fx.clock.ms = Number((await fx.client.getBlock()).timestamp) * 1000
    await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(await fx.mintOp(acct), id))
    fx.clock.ms = null
  })
})
