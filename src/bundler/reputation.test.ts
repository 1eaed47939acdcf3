import { sql } from 'kysely'
import { encodeFunctionData, parseAbi, parseEther, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  estimatedAndSigned,
  minedReceipt,
  NETWORK,
  paymasterData,
  startBundlerFixture,
  TestAccount,
  withPaymaster,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import { ruleBreakers } from '../../test/fixtures/bundler/erc7562-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Address, Hash } from '../types.ts'
import { DEFAULT_REPUTATION, Reputation } from './reputation.ts'
import type { BundlerService } from './service.ts'
import type { UserOperation } from './types.ts'

/**
 * ERC-7562 reputation of factories and paymasters, persisted per network: statuses from the
 * standard thresholds, refusals (-32504) naming the entity, the per-entity limits (staked
 * entities exempt), GREP-040 after a bundle-time failure, hourly decay.
 */

describe.each(storageBackends())('entity reputation on $name', (backend) => {
  let fx: BundlerFixture
  let svc: BundlerService
  let breakers: ReturnType<typeof ruleBreakers>

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    // Small limits so that a test needs a handful of ops, not dozens.
    svc = fx.service({
      reputation: { enabled: true, sameUnstakedEntityMempoolCount: 2, throttledEntityBundleCount: 2 },
    })
    breakers = ruleBreakers(fx)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const v07 = () => fx.entryPoint('v07').address
  /** An op of a fresh (hand-assembled, deployed) account, sponsored by `paymaster`. */
  async function sponsored(paymaster: Address, signed = false): Promise<UserOperation> {
    const account = await breakers.account({})
    const op = {
      ...withPaymaster(await breakers.opOf(account, 'v07'), paymaster, { verification: 100_000n }),
      preVerificationGas: 100_000n,
    }
    return signed ? { ...op, paymasterData: await paymasterData(fx, op, fx.paymasterSigner) } : op
  }
  const counters = async (address: Address) =>
    (await svc.debug.dumpReputation(NETWORK)).find((e) => e.address === address)

  it('status follows ERC-7562: maxSeen = opsSeen / 10 against opsIncluded + 10 (throttled) and + 50 (banned)', () => {
    const rep = new Reputation(fx.storage.db, NETWORK, DEFAULT_REPUTATION, {
      minStake: 1n,
      minUnstakeDelaySec: 1n,
    })
    expect(rep.status({ opsSeen: 109, opsIncluded: 0 })).toBe('ok')
    expect(rep.status({ opsSeen: 110, opsIncluded: 0 })).toBe('throttled')
    expect(rep.status({ opsSeen: 600, opsIncluded: 10 })).toBe('throttled')
    expect(rep.status({ opsSeen: 610, opsIncluded: 0 })).toBe('banned')
  })

  it('counts ops seen and included per paymaster; a banned paymaster is refused with -32504 naming it', async () => {
    const pm = fx.aa.paymaster
    const before = (await counters(pm)) ?? { opsSeen: 0, opsIncluded: 0 }
    const hash = await svc.sendUserOperation(NETWORK, await sponsored(pm, true), v07())
    expect(await counters(pm)).toMatchObject({ opsSeen: before.opsSeen + 1, opsIncluded: before.opsIncluded })
    expect((await minedReceipt(svc, hash)).success).toBe(true)
    expect(await counters(pm)).toMatchObject({
      opsSeen: before.opsSeen + 1,
      opsIncluded: before.opsIncluded + 1,
    })

    await svc.debug.setReputation(NETWORK, [{ address: pm, opsSeen: 1000, opsIncluded: 0 }])
    expect(await counters(pm)).toMatchObject({ status: 'banned' })
    await expect(svc.sendUserOperation(NETWORK, await sponsored(pm, true), v07())).rejects.toMatchObject({
      code: -32504,
      message: expect.stringContaining(
        `paymaster ${pm} is banned by this bundler's ERC-7562 reputation rules`,
      ),
    })
    // Unsafe mode (the default) trusts the simulation alone, reputation included, as Alto's does.
    expect(await fx.service().sendUserOperation(NETWORK, await sponsored(pm, true), v07())).toMatch(/^0x/)
    await svc.debug.clearReputation(NETWORK)
    expect(await svc.sendUserOperation(NETWORK, await sponsored(pm, true), v07())).toMatch(/^0x/)
    while ((await svc.bundleNow(NETWORK)) !== 'idle');
  }, 120_000)

  it('a throttled paymaster may have 4 ops waiting and 2 (as configured) per bundle', async () => {
    const pm = fx.aa.paymaster
    await svc.debug.setReputation(NETWORK, [{ address: pm, opsSeen: 200, opsIncluded: 0 }])
    const hashes: Hash[] = []
    for (let i = 0; i < 4; i++)
      hashes.push(await svc.sendUserOperation(NETWORK, await sponsored(pm, true), v07()))
    await expect(svc.sendUserOperation(NETWORK, await sponsored(pm, true), v07())).rejects.toMatchObject({
      code: -32504,
      message: expect.stringMatching(
        new RegExp(
          `^paymaster ${pm} is throttled .*: it may have at most 4 UserOperations waiting and has 4`,
        ),
      ),
    })
    expect(await svc.bundleNow(NETWORK)).toBe('sent')
    const inFlight = await fx.storage.db
      .selectFrom('bundler_user_ops')
      .select('hash')
      .where('state', '=', 'submitted')
      .execute()
    expect(inFlight).toHaveLength(2)
    for (const h of hashes) expect((await minedReceipt(svc, h)).success).toBe(true)
    await svc.debug.clearReputation(NETWORK)
  }, 120_000)

  it('an unstaked paymaster is limited to its UREP-020 share of waiting ops; the staked one is not', async () => {
    const unstaked = await breakers.paymaster({})
    for (let i = 0; i < 2; i++) await svc.sendUserOperation(NETWORK, await sponsored(unstaked), v07())
    await expect(svc.sendUserOperation(NETWORK, await sponsored(unstaked), v07())).rejects.toMatchObject({
      code: -32504,
      message: expect.stringContaining(
        `paymaster ${unstaked} is not staked (ERC-7562 UREP-020, opsSeen 2, opsIncluded 0): it may have at most 2 UserOperations waiting and has 2; wait for them to be included, or stake the paymaster`,
      ),
    })
    for (let i = 0; i < 3; i++)
      await svc.sendUserOperation(NETWORK, await sponsored(fx.aa.paymaster, true), v07())
    while ((await svc.bundleNow(NETWORK)) !== 'idle');
    await svc.debug.clearReputation(NETWORK)
  }, 120_000)

  it('GREP-040: a paymaster whose validated op fails at bundle time (AA33) is banned', async () => {
    const pm = await breakers.paymaster({})
    const hash = await svc.sendUserOperation(NETWORK, await sponsored(pm), v07())
    // The paymaster turns hostile between acceptance and bundling.
    await rpc(fx.anvil.url, 'anvil_setCode', [pm, '0x60006000fd'])
    while ((await svc.bundleNow(NETWORK)) !== 'idle');
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'dropped',
      reason: expect.stringMatching(/^AA33/),
    })
    expect(await counters(pm)).toMatchObject({ opsSeen: 10_000, opsIncluded: 0, status: 'banned' })
    await svc.debug.clearReputation(NETWORK)
  }, 120_000)

  it('EREP-015: an op that fails in the bundle for its account (AA23) does not count as seen for its paymaster', async () => {
    const pm = await breakers.paymaster({})
    await svc.debug.setReputation(NETWORK, [{ address: pm, opsSeen: 5, opsIncluded: 2 }])
    const account = await breakers.account({})
    const op = {
      ...withPaymaster(await breakers.opOf(account, 'v07'), pm, { verification: 100_000n }),
      preVerificationGas: 100_000n,
    }
    const hash = await svc.sendUserOperation(NETWORK, op, v07())
    expect(await counters(pm)).toMatchObject({ opsSeen: 6, opsIncluded: 2 })
    // The account (not the paymaster) turns hostile between acceptance and bundling.
    await rpc(fx.anvil.url, 'anvil_setCode', [account, '0x60006000fd'])
    while ((await svc.bundleNow(NETWORK)) !== 'idle');
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'dropped',
      reason: expect.stringMatching(/^AA23/),
    })
    expect(await counters(pm)).toMatchObject({ opsSeen: 5, opsIncluded: 2, status: 'ok' })
    await svc.debug.clearReputation(NETWORK)
  }, 120_000)

  it('EREP-020: a staked factory whose newly deployed account fails in the bundle (AA21) is blamed and banned', async () => {
    const factory = fx.aa.simpleAccountFactory.v07
    // The dev factory is unstaked; stake is msg.sender's, so it stakes as the factory itself.
    const addStake = parseAbi(['function addStake(uint32 unstakeDelaySec) payable'])
    await rpc(fx.anvil.url, 'anvil_impersonateAccount', [factory])
    await rpc(fx.anvil.url, 'anvil_setBalance', [factory, toHex(parseEther('3'))])
    const staking = (await rpc(fx.anvil.url, 'eth_sendTransaction', [
      {
        from: factory,
        to: v07(),
        value: toHex(parseEther('2')),
        data: encodeFunctionData({ abi: addStake, functionName: 'addStake', args: [86_400] }),
      },
    ])) as Hash
    await fx.client.waitForTransactionReceipt({ hash: staking, pollingInterval: 50 })
    await rpc(fx.anvil.url, 'anvil_stopImpersonatingAccount', [factory])
    expect((await svc.debug.getStakeStatus(NETWORK, factory, v07())).isStaked).toBe(true)

    const acct = await TestAccount.create(fx, 'v07')
    const op = await estimatedAndSigned(
      fx,
      svc,
      acct,
      await acct.op({ to: '0x000000000000000000000000000000000000dead' as Address }),
    )
    await fx.fund(acct.address)
    const hash = await svc.sendUserOperation(NETWORK, op, v07())
    // The counterfactual account's funds go before bundling: it cannot pay its prefund (AA21).
    await rpc(fx.anvil.url, 'anvil_setBalance', [acct.address, '0x0'])
    while ((await svc.bundleNow(NETWORK)) !== 'idle');
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'dropped',
      reason: expect.stringMatching(/^AA21/),
    })
    expect(await counters(factory)).toMatchObject({ opsSeen: 10_000, opsIncluded: 0, status: 'banned' })
    await svc.debug.clearReputation(NETWORK)
  }, 120_000)

  it('counters decay by 23/24 for every whole hour, once', async () => {
    const address = '0x00000000000000000000000000000000000000aa' as Address
    await svc.debug.setReputation(NETWORK, [{ address, opsSeen: 240, opsIncluded: 48 }])
    await sql`update bundler_reputation set decayed_at = now() - interval '2 hours 10 minutes' where address = ${address}`.execute(
      fx.storage.db,
    )
    const rep = new Reputation(fx.storage.db, NETWORK, DEFAULT_REPUTATION, {
      minStake: 1n,
      minUnstakeDelaySec: 1n,
    })
    expect(await rep.decay()).toBe(2)
    // 240 → 230 → 220; 48 → 46 → 44 (integer steps, as ERC-7562 writes them).
    expect(await counters(address)).toMatchObject({ opsSeen: 220, opsIncluded: 44 })
    expect(await rep.decay()).toBe(0)
    expect(await counters(address)).toMatchObject({ opsSeen: 220, opsIncluded: 44 })
  })
})
