import { getAddress, parseAbi } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployToken,
  estimatedAndSigned,
  minedReceipt,
  mintData,
  NETWORK,
  paymasterData,
  startBundlerFixture,
  TestAccount,
  withPaymaster,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import type { Address, Hash } from '../types.ts'
import { toRpcUserOperation } from './schema.ts'
import type { BundlerService } from './service.ts'
import type { EntryPointVersion } from './types.ts'
import { userOpHash } from './userop.ts'

describe.each(storageBackends())('bundler engine on $name', (backend) => {
  let fx: BundlerFixture
  let svc: BundlerService
  let token: Address

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    svc = fx.service()
    token = await deployToken(fx)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s SimpleAccount: the first op deploys the account and calls; a second follows; both mined with exactly the estimates',
    async (version) => {
      const acct = await TestAccount.create(fx, version)
      const ep = fx.entryPoint(version)
      expect(svc.supportedEntryPoints(NETWORK)).toContain(ep.address)
      // Estimated while the account is neither deployed nor funded.
      const first = await estimatedAndSigned(
        fx,
        svc,
        acct,
        await acct.op({ to: token, data: mintData(acct.address, 5n) }),
      )
      await fx.fund(acct.address)
      const h1 = await svc.sendUserOperation(NETWORK, first, ep.address)
      expect(h1).toBe(userOpHash(first, ep.address, fx.anvil.chainId))

      // Accepted = durable and visible, not yet mined.
      expect(await svc.getUserOperationReceipt(NETWORK, h1)).toBeNull()
      const pending = await svc.getUserOperationByHash(NETWORK, h1)
      expect(pending).toMatchObject({
        entryPoint: getAddress(ep.address),
        blockNumber: null,
        transactionHash: null,
        status: 'pending',
      })
      expect(pending?.userOperation).toEqual(toRpcUserOperation(first))

      const r1 = await minedReceipt(svc, h1)
      expect(r1).toMatchObject({
        userOpHash: h1,
        entryPoint: ep.address,
        sender: acct.address,
        success: true,
        nonce: '0x0',
      })
      expect(await acct.deployed()).toBe(true)
      // Only this op's own logs: the mint's Transfer (AccountDeployed belongs to validation).
      expect(r1.logs).toHaveLength(1)
      expect(r1.logs[0]?.address.toLowerCase()).toBe(token)
      expect(r1.logs[0]?.topics[0]).toBe('0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef')
      expect(BigInt(r1.actualGasUsed)).toBeGreaterThan(0n)
      expect(r1.receipt.transactionHash).toBe(
        (await svc.getUserOperationByHash(NETWORK, h1))?.transactionHash,
      )

      const second = await estimatedAndSigned(
        fx,
        svc,
        acct,
        await acct.op({ to: token, data: mintData(acct.address, 7n) }),
      )
      expect(second.nonce).toBe(1n)
      const h2 = await svc.sendUserOperation(NETWORK, second, ep.address)
      const r2 = await minedReceipt(svc, h2)
      expect(r2.success).toBe(true)
      const byHash = await svc.getUserOperationByHash(NETWORK, h2)
      expect(byHash).toMatchObject({ status: 'included', blockNumber: r2.receipt.blockNumber })
      const balance = await fx.client.readContract({
        address: token,
        abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
        functionName: 'balanceOf',
        args: [acct.address],
      })
      expect(balance).toBe(12n)
    },
    120_000,
  )

  it('v07 with the VerifyingPaymaster: an unfunded counterfactual account is sponsored, with paymaster gas estimated', async () => {
    const acct = await TestAccount.create(fx, 'v07')
    const ep = fx.entryPoint('v07')
    const stub = withPaymaster(
      await acct.op({ to: token, data: mintData(acct.address, 1n) }),
      fx.aa.paymaster,
    )
    // ERC-7677 flow: stub paymaster data (well-formed, not yet signed for these gas values).
    const signedStub = { ...stub, paymasterData: await paymasterData(fx, stub, acct.owner) }
    const op = await estimatedAndSigned(fx, svc, acct, signedStub)
    expect(op.version === 'v07' && op.paymasterVerificationGasLimit > 0n).toBe(true)
    expect(await fx.client.getBalance({ address: acct.address })).toBe(0n)
    const hash = await svc.sendUserOperation(NETWORK, op, ep.address)
    const r = await minedReceipt(svc, hash)
    expect(r).toMatchObject({ success: true, paymaster: fx.aa.paymaster })
    expect(await fx.client.getBalance({ address: acct.address })).toBe(0n)
  }, 120_000)

  it('an op whose call reverts is mined with success false and the revert reason; estimation refuses it with -32521', async () => {
    const acct = await TestAccount.create(fx, 'v07')
    const ep = fx.entryPoint('v07')
    await fx.fund(acct.address)
    const deploy = await estimatedAndSigned(
      fx,
      svc,
      acct,
      await acct.op({ to: token, data: mintData(acct.address, 1n) }),
    )
    await minedReceipt(svc, await svc.sendUserOperation(NETWORK, deploy, ep.address))
    // mint(address(0), 1) reverts in OpenZeppelin's ERC20 (ERC20InvalidReceiver).
    const bad = await acct.op({ to: token, data: mintData('0x0000000000000000000000000000000000000000', 1n) })
    await expect(
      svc.estimateUserOperationGas(NETWORK, { ...bad, ...(await fx.fees()) }, ep.address),
    ).rejects.toMatchObject({ code: -32521, message: expect.stringContaining('reverts') })
    // Sent anyway with hand-picked limits: validation passes, execution reverts on chain.
    const op = await acct.sign({
      ...bad,
      ...(await fx.fees()),
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 60_000n,
    })
    const hash = await svc.sendUserOperation(NETWORK, op, ep.address)
    const r = await minedReceipt(svc, hash)
    expect(r.success).toBe(false)
    expect(r.reason).toMatch(/^0xec442f05/) // ERC20InvalidReceiver(address)
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({ status: 'failed' })
  }, 120_000)

  it('answers null for hashes it never saw, and finds ops mined by someone else (or dropped here) from the chain', async () => {
    const unknown = `0x${'ab'.repeat(32)}` as Hash
    expect(await svc.getUserOperationReceipt(NETWORK, unknown)).toBeNull()
    expect(await svc.getUserOperationByHash(NETWORK, unknown)).toBeNull()
    // Another bundler instance on another database (here: a fresh schema) mined it.
    const acct = await TestAccount.create(fx, 'v06')
    await fx.fund(acct.address)
    const op = await estimatedAndSigned(
      fx,
      svc,
      acct,
      await acct.op({ to: token, data: mintData(acct.address, 2n) }),
    )
    const hash = await svc.sendUserOperation(NETWORK, op, fx.entryPoint('v06').address)
    const r = await minedReceipt(svc, hash)
    // Our own record says dropped (a receipt that came late, or a bundle of someone else's): the
    // chain's word wins.
    await fx.storage.db
      .updateTable('bundler_user_ops')
      .set({ state: 'dropped', reason: 'AA25 invalid account nonce', bundle_tx: null })
      .where('hash', '=', hash)
      .execute()
    expect(await svc.getUserOperationReceipt(NETWORK, hash)).toMatchObject({
      success: true,
      receipt: { transactionHash: r.receipt.transactionHash },
    })
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      transactionHash: r.receipt.transactionHash,
    })
    await fx.storage.db.deleteFrom('bundler_user_ops').where('hash', '=', hash).execute()
    expect(await svc.getUserOperationReceipt(NETWORK, hash)).toMatchObject({
      userOpHash: hash,
      success: true,
      receipt: { transactionHash: r.receipt.transactionHash },
    })
    const found = await svc.getUserOperationByHash(NETWORK, hash)
    expect(found).toMatchObject({
      entryPoint: getAddress(fx.entryPoint('v06').address),
      transactionHash: r.receipt.transactionHash,
    })
    expect(found?.userOperation).toEqual(toRpcUserOperation(op))
  }, 120_000)
})
