import { keccak256, parseAbi } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployedAccount,
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
import { until } from '../../test/helpers/until.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { RpcCaller } from './chain.ts'
import { USER_OP_EVENT } from './receipts.ts'
import type { BundlerService } from './service.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'

describe.each(storageBackends())('durable mempool on $name', (backend) => {
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

  const ep = (v: EntryPointVersion) => fx.entryPoint(v).address

  const newAccount = (version: EntryPointVersion) => deployedAccount(fx, svc, version, token)

  /** How many UserOperationEvents the chain holds for `hash` (an op mined twice would show 2). */
  async function timesMined(entryPoint: Address, hash: Hash): Promise<number> {
    const logs = await fx.client.request({
      method: 'eth_getLogs',
      params: [
        { address: entryPoint, topics: [USER_OP_EVENT as Hex, hash], fromBlock: '0x0', toBlock: 'latest' },
      ],
    })
    return logs.length
  }

  it('replaces a pending op only when both fees rise by 10 %; the same op sent twice keeps one row', async () => {
    const acct = await newAccount('v07')
    const draft = await acct.op({ to: token, data: mintData(acct.address), nonceKey: 10n })
    const first = await estimatedAndSigned(fx, svc, acct, draft)
    const h1 = await svc.sendUserOperation(NETWORK, first, ep('v07'))
    expect(await svc.sendUserOperation(NETWORK, first, ep('v07'))).toBe(h1)

    const bump = (pct: bigint) => ({
      maxFeePerGas: (first.maxFeePerGas * (100n + pct)) / 100n,
      maxPriorityFeePerGas: (first.maxPriorityFeePerGas * (100n + pct)) / 100n,
    })
    const needFee = (first.maxFeePerGas * 110n + 99n) / 100n
    const tooLittle = await acct.sign({ ...first, ...bump(5n) })
    await expect(svc.sendUserOperation(NETWORK, tooLittle, ep('v07'))).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining(
        `to replace it send maxFeePerGas >= ${needFee} and maxPriorityFeePerGas >=`,
      ),
    })
    // Only one fee raised is not enough either.
    const oneFee = await acct.sign({ ...first, maxFeePerGas: bump(20n).maxFeePerGas })
    await expect(svc.sendUserOperation(NETWORK, oneFee, ep('v07'))).rejects.toMatchObject({ code: -32602 })

    const replacement = await acct.sign({ ...first, ...bump(11n) })
    const h2 = await svc.sendUserOperation(NETWORK, replacement, ep('v07'))
    expect(h2).not.toBe(h1)
    expect(await svc.getUserOperationByHash(NETWORK, h1)).toMatchObject({
      status: 'dropped',
      reason: `replaced by ${h2}`,
    })
    const r = await minedReceipt(svc, h2)
    expect(r.success).toBe(true)
    expect(await svc.getUserOperationReceipt(NETWORK, h1)).toBeNull()
    expect(await timesMined(ep('v07'), h1)).toBe(0)
  }, 120_000)

  it('accepts ops of one sender under different nonce keys up to the unstaked limit, then -32504; all are mined', async () => {
    const acct = await newAccount('v06')
    const hashes: Hash[] = []
    for (const key of [1n, 2n, 3n, 4n]) {
      const op = await estimatedAndSigned(
        fx,
        svc,
        acct,
        await acct.op({ to: token, data: mintData(token), nonceKey: key }),
      )
      hashes.push(await svc.sendUserOperation(NETWORK, op, ep('v06')))
    }
    const fifth = await estimatedAndSigned(
      fx,
      svc,
      acct,
      await acct.op({ to: token, data: mintData(token), nonceKey: 5n }),
    )
    await expect(svc.sendUserOperation(NETWORK, fifth, ep('v06'))).rejects.toMatchObject({
      code: -32504,
      message: expect.stringContaining(
        'already has 4 UserOperations waiting; an unstaked sender may have at most 4',
      ),
    })
    for (const h of hashes) expect((await minedReceipt(svc, h)).success).toBe(true)
    // Room again once they are mined.
    const h5 = await svc.sendUserOperation(NETWORK, fifth, ep('v06'))
    expect((await minedReceipt(svc, h5)).success).toBe(true)
  }, 120_000)

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: the next nonces under one key are accepted while the first waits, count toward the sender limit, and are mined in order',
    async (version) => {
      const acct = await newAccount(version)
      const key = 42n
      const first = await estimatedAndSigned(
        fx,
        svc,
        acct,
        await acct.op({ to: token, data: mintData(token), nonceKey: key }),
      )
      const hashes = [await svc.sendUserOperation(NETWORK, first, ep(version))]
      // Queued behind the waiting ones: estimated and validated as the chain will see them.
      for (let i = 1n; i < 4n; i++) {
        const draft = {
          ...(await acct.op({ to: token, data: mintData(token), nonceKey: key })),
          nonce: first.nonce + i,
        }
        const op = await estimatedAndSigned(fx, svc, acct, draft)
        hashes.push(await svc.sendUserOperation(NETWORK, op, ep(version)))
      }
      const draft = await acct.op({ to: token, data: mintData(token), nonceKey: key })
      const fifth = await acct.sign({ ...first, callData: draft.callData, nonce: first.nonce + 4n })
      await expect(svc.sendUserOperation(NETWORK, fifth, ep(version))).rejects.toMatchObject({
        code: -32504,
        message: expect.stringContaining('already has 4 UserOperations waiting'),
      })
      const gap = await acct.sign({ ...first, nonce: first.nonce + 6n })
      await expect(svc.sendUserOperation(NETWORK, gap, ep(version))).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining(
          `the next nonce of sender ${acct.address} for key ${key} is ${first.nonce + 4n}`,
        ),
      })
      const receipts = []
      for (const h of hashes) receipts.push(await minedReceipt(svc, h))
      expect(receipts.map((r) => r.success)).toEqual([true, true, true, true])
      expect(receipts.map((r) => BigInt(r.nonce))).toEqual([0n, 1n, 2n, 3n].map((i) => first.nonce + i))
      const blocks = receipts.map((r) => BigInt(r.receipt.blockNumber as string))
      expect([...blocks].sort((a, b) => (a < b ? -1 : 1))).toEqual(blocks)
    },
    120_000,
  )

  it("a paymaster's waiting ops may not cost more than its deposit: -32508 once they would", async () => {
    const deposit = await fx.client.readContract({
      address: ep('v07'),
      abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
      functionName: 'balanceOf',
      args: [fx.aa.paymaster],
    })
    const gas = { verification: 400_000n, call: 100_000n, pvg: 100_000n, paymaster: 100_000n }
    // Each op may cost up to 40 % of the deposit: two fit, the third does not.
    const maxFeePerGas = (deposit * 4n) / 10n / (gas.verification + gas.call + gas.pvg + gas.paymaster)
    const sponsored = async () => {
      const acct = await TestAccount.create(fx, 'v07')
      const op = withPaymaster(await acct.op({ to: token, data: mintData(acct.address) }), fx.aa.paymaster, {
        verification: gas.paymaster,
      })
      const filled = {
        ...op,
        verificationGasLimit: gas.verification,
        callGasLimit: gas.call,
        preVerificationGas: gas.pvg,
        maxFeePerGas,
        maxPriorityFeePerGas: 1_000_000_000n,
      }
      return acct.sign({ ...filled, paymasterData: await paymasterData(fx, filled, fx.paymasterSigner) })
    }
    const accepted = [
      await svc.sendUserOperation(NETWORK, await sponsored(), ep('v07')),
      await svc.sendUserOperation(NETWORK, await sponsored(), ep('v07')),
    ]
    await expect(svc.sendUserOperation(NETWORK, await sponsored(), ep('v07'))).rejects.toMatchObject({
      code: -32508,
      message: expect.stringMatching(
        /paymaster deposit too low: paymaster 0x[0-9a-f]{40} has a deposit of \d+ wei .* must add to its deposit/,
      ),
    })
    for (const h of accepted) expect((await minedReceipt(svc, h)).success).toBe(true)
  }, 120_000)

  it('ops accepted by one instance, one of them in a bundle that never reached the node, are all mined once by a fresh instance', async () => {
    // The first instance "crashes" right after committing its bundle: the node never sees it.
    const lossy: RpcCaller = {
      call: (method, params) =>
        method === 'eth_sendRawTransaction'
          ? Promise.resolve({ result: keccak256(params[0] as Hex) })
          : fx.rpc.call(method, params),
    }
    const first = fx.service({ rpc: lossy })
    const sent: { hash: Hash; entryPoint: Address }[] = []
    for (const version of ['v07', 'v06', 'v07', 'v06', 'v07', 'v06'] as const) {
      const acct = await TestAccount.create(fx, version)
      await fx.fund(acct.address)
      const op: UserOperation = await estimatedAndSigned(
        fx,
        svc,
        acct,
        await acct.op({ to: token, data: mintData(acct.address) }),
      )
      sent.push({ hash: await first.sendUserOperation(NETWORK, op, ep(version)), entryPoint: ep(version) })
    }
    expect(await first.bundleNow(NETWORK)).toBe('sent')
    const inFlight = await fx.storage.db
      .selectFrom('bundler_user_ops')
      .select(['hash', 'state'])
      .where(
        'hash',
        'in',
        sent.map((s) => s.hash),
      )
      .execute()
    expect(inFlight.filter((r) => r.state === 'submitted')).toHaveLength(3)
    expect(inFlight.filter((r) => r.state === 'pending')).toHaveLength(3)

    const second = fx.service()
    second.start()
    try {
      await until('all six ops mined', async () => {
        const receipts = await Promise.all(sent.map((s) => second.getUserOperationReceipt(NETWORK, s.hash)))
        return receipts.every((r) => r?.success === true)
      })
    } finally {
      await second.stop()
    }
    for (const s of sent) expect(await timesMined(s.entryPoint, s.hash)).toBe(1)
    const states = await fx.storage.db
      .selectFrom('bundler_user_ops')
      .select('state')
      .where(
        'hash',
        'in',
        sent.map((s) => s.hash),
      )
      .execute()
    expect(states.map((r) => r.state)).toEqual(Array(6).fill('included'))
    const open = await fx.storage.db
      .selectFrom('bundler_bundles')
      .select('tx_hash')
      .where('state', '=', 'submitted')
      .execute()
    expect(open).toEqual([])
  }, 120_000)

  it.skipIf(backend.name !== 'postgres')(
    'two instances on one PostgreSQL: ops sent to either are bundled once; stopping the builder hands over to the other',
    async () => {
      const a = fx.service()
      const b = fx.service()
      a.start()
      // a takes the network's builder lock first; b waits for it.
      await until('a holds the builder lock', () => fx.builderLockHeld())
      b.start()
      const send = async (via: BundlerService, version: EntryPointVersion) => {
        const acct = await TestAccount.create(fx, version)
        await fx.fund(acct.address)
        const op = await estimatedAndSigned(
          fx,
          svc,
          acct,
          await acct.op({ to: token, data: mintData(acct.address) }),
        )
        return { hash: await via.sendUserOperation(NETWORK, op, ep(version)), entryPoint: ep(version) }
      }
      const before = [await send(a, 'v07'), await send(b, 'v06'), await send(b, 'v07')]
      await until('ops mined while a builds', async () =>
        (await Promise.all(before.map((s) => b.getUserOperationReceipt(NETWORK, s.hash)))).every(Boolean),
      )
      await a.stop()
      const after = [await send(b, 'v07'), await send(a, 'v06')]
      await until('ops mined after b took over', async () =>
        (await Promise.all(after.map((s) => b.getUserOperationReceipt(NETWORK, s.hash)))).every(Boolean),
      )
      await b.stop()
      for (const s of [...before, ...after]) expect(await timesMined(s.entryPoint, s.hash)).toBe(1)
    },
    120_000,
  )
})
