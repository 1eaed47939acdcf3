import { privateKeyToAccount } from 'viem/accounts'
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
import { ruleBreakers } from '../../test/fixtures/bundler/erc7562-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Address } from '../types.ts'
import type { BundlerService } from './service.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'

/**
 * ERC-7562 safe mode on anvil: the tracer and the rules over real validations. SimpleAccount
 * (deployed by its op's initCode, sponsored or not) passes; hand-assembled accounts and
 * paymasters that break one rule each are refused with the rule and entity named, and the same
 * ops pass in unsafe mode. Only the first backend: refusals never reach the database.
 */

describe.each(storageBackends().slice(0, 1))('ERC-7562 safe mode ($name)', (backend) => {
  let fx: BundlerFixture
  let safe: BundlerService
  let unsafe: BundlerService
  let token: Address
  let breakers: ReturnType<typeof ruleBreakers>

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    breakers = ruleBreakers(fx)
    // Safe as dev mode runs it: v0.7 simulations through the deployed EntryPointSimulations
    // (the trace keeps the full override); unsafe sends the code with each simulation.
    safe = fx.service({ validation: { mode: 'safe' }, deploySimulations: true })
    unsafe = fx.service()
    expect(await safe.prepareSimulations(NETWORK)).not.toBeNull()
    token = await deployToken(fx)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const send = (svc: BundlerService, op: UserOperation) =>
    svc.sendUserOperation(NETWORK, op, fx.entryPoint(op.version).address)
  const anvil = (method: string, params: unknown[]) => rpc(fx.anvil.url, method, params)

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s SimpleAccount deployed by its first op (initCode) passes safe mode and is mined; so does its second op',
    async (version) => {
      const acct = await TestAccount.create(fx, version)
      await fx.fund(acct.address)
      const first = await estimatedAndSigned(
        fx,
        safe,
        acct,
        await acct.op({ to: token, data: mintData(acct.address) }),
      )
      expect((await minedReceipt(safe, await send(safe, first))).success).toBe(true)
      const second = await estimatedAndSigned(
        fx,
        safe,
        acct,
        await acct.op({ to: token, data: mintData(token) }),
      )
      expect((await minedReceipt(safe, await send(safe, second))).success).toBe(true)
    },
    120_000,
  )

  it('v07 counterfactual SimpleAccount sponsored by the (staked) VerifyingPaymaster passes safe mode', async () => {
    const acct = await TestAccount.create(fx, 'v07')
    const stub = withPaymaster(await acct.op({ to: token, data: mintData(acct.address) }), fx.aa.paymaster)
    const op = await estimatedAndSigned(fx, safe, acct, {
      ...stub,
      paymasterData: await paymasterData(fx, stub, acct.owner),
    })
    expect((await minedReceipt(safe, await send(safe, op))).success).toBe(true)
  }, 120_000)

  it.each<[EntryPointVersion, 'TIMESTAMP' | 'NUMBER']>([
    ['v07', 'TIMESTAMP'],
    ['v06', 'NUMBER'],
  ])(
    '%s account whose validateUserOp reads %s: -32502 in safe mode, accepted in unsafe mode',
    async (version, opcode) => {
      const account = await breakers.account({ banned: opcode })
      const op = await breakers.opOf(account, version)
      await expect(send(safe, op)).rejects.toMatchObject({
        code: -32502,
        message: expect.stringMatching(
          new RegExp(
            `^account uses banned opcode: ${opcode} \\[OP-011\\]: account ${account} uses the banned opcode ${opcode}`,
          ),
        ),
        data: { rule: 'OP-011' },
      })
      // The same account without the opcode passes the rules: it is the opcode that is refused.
      const clean = await breakers.account({})
      expect(await send(safe, await breakers.opOf(clean, version))).toMatch(/^0x[0-9a-f]{64}$/)
      const hash = await send(unsafe, op)
      expect((await minedReceipt(unsafe, hash)).success).toBe(true)
    },
    120_000,
  )

  it('an unstaked paymaster reading its own storage: -32502 with the stake it needs, naming it; accepted in unsafe mode', async () => {
    const acct = await TestAccount.create(fx, 'v07')
    await fx.fund(acct.address)
    const deploy = await estimatedAndSigned(
      fx,
      unsafe,
      acct,
      await acct.op({ to: token, data: mintData(acct.address) }),
    )
    await minedReceipt(unsafe, await send(unsafe, deploy))

    const paymaster = await breakers.paymaster({ readsOwnStorage: true })
    const base = await acct.op({ to: token, data: mintData(token) })
    const op = await acct.sign({
      ...withPaymaster(base, paymaster, { verification: 100_000n }),
      ...(await fx.fees()),
      callGasLimit: 100_000n,
      verificationGasLimit: 150_000n,
      preVerificationGas: 100_000n,
    })
    await expect(send(safe, op)).rejects.toMatchObject({
      code: -32502,
      message: expect.stringMatching(
        new RegExp(
          `^unstaked paymaster accessed paymaster slot 0x0 \\[STO-031\\]: paymaster ${paymaster} accesses its own storage; .*stake at least 1000000000000000000 wei with an unstake delay of at least 86400 s`,
        ),
      ),
    })
    expect((await minedReceipt(unsafe, await send(unsafe, op))).success).toBe(true)
  }, 120_000)

  it('an account that calls an address without code during validation: -32502 [OP-041]', async () => {
    const empty = privateKeyToAccount(`0x${'77'.repeat(32)}`).address.toLowerCase() as Address
    const account = await breakers.account({ callsEmpty: empty })
    await expect(send(safe, await breakers.opOf(account, 'v07'))).rejects.toMatchObject({
      code: -32502,
      message: expect.stringContaining(
        `account accesses un-deployed contract address ${empty} with opcode CALL [OP-041]: account ${account} accesses ${empty}, which has no code`,
      ),
    })
  }, 120_000)

  it('an account whose validation lets a call run out of gas (and carries on): -32502 [OP-020]', async () => {
    const account = await breakers.account({ oogInCall: true })
    const op = await breakers.opOf(account, 'v06')
    await expect(send(safe, op)).rejects.toMatchObject({
      code: -32502,
      message: expect.stringContaining(
        `account internally reverts on oog [OP-020]: account ${account} runs out of gas in a call`,
      ),
    })
    expect(await send(unsafe, op)).toMatch(/^0x[0-9a-f]{64}$/)
  }, 120_000)

  it('a precompile call given too little gas is no OP-020: the account itself never runs out of gas', async () => {
    const account = await breakers.account({ precompileOog: true })
    expect(await send(safe, await breakers.opOf(account, 'v07'))).toMatch(/^0x[0-9a-f]{64}$/)
  }, 120_000)

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s account checking the EntryPoint has code (EXTCODESIZE, ISZERO) before depositTo{value} passes [OP-051]',
    async (version) => {
      const ep = fx.entryPoint(version).address
      const account = await breakers.account({ depositsTo: ep })
      expect(await send(safe, await breakers.opOf(account, version))).toMatch(/^0x[0-9a-f]{64}$/)
    },
    120_000,
  )

  it.each(['sender first', 'paymaster first'])(
    'STO-040: an address pending as one op’s sender is no other op’s paymaster, and the reverse (%s)',
    async (order) => {
      const both = await breakers.accountPaymaster()
      const other = await breakers.account({})
      const asSender = await breakers.opOf(both, 'v07')
      const base = await breakers.opOf(other, 'v07')
      const asPaymaster = {
        ...withPaymaster(base, both, { verification: 100_000n }),
        preVerificationGas: 100_000n,
      }
      if (order === 'sender first') {
        expect(await send(safe, asSender)).toMatch(/^0x[0-9a-f]{64}$/)
        await expect(send(safe, asPaymaster)).rejects.toMatchObject({
          code: -32502,
          message: expect.stringContaining(
            `paymaster ${both} is used as a sender entity in another UserOperation currently in mempool [STO-040]`,
          ),
        })
      } else {
        expect(await send(safe, asPaymaster)).toMatch(/^0x[0-9a-f]{64}$/)
        await expect(send(safe, asSender)).rejects.toMatchObject({
          code: -32502,
          message: expect.stringContaining(
            'is used as a different entity in another UserOperation currently in mempool',
          ),
        })
      }
    },
    120_000,
  )

  it('STO-041: an op whose validation read storage of another pending op’s sender waits for a later bundle', async () => {
    const token = await breakers.account({ readsCallerSlot: true })
    const reader = await breakers.account({ staticCalls: token })
    const first = await send(safe, await breakers.opOf(token, 'v07'))
    const second = await send(safe, await breakers.opOf(reader, 'v07'))
    // Bundles until `hash` is mined (earlier tests' ops, at either EntryPoint, may go first).
    const bundledUntil = async (hash: `0x${string}`) => {
      for (let i = 0; i < 4 && !(await safe.getUserOperationReceipt(NETWORK, hash)); i++)
        await safe.debug.sendBundleNow(NETWORK)
      return safe.getUserOperationReceipt(NETWORK, hash)
    }
    expect(await bundledUntil(first)).toMatchObject({ success: true })
    // Still pending, not bundled beside the op it read from and dropped.
    expect(await safe.getUserOperationByHash(NETWORK, second)).toMatchObject({ status: 'pending' })
    expect(await bundledUntil(second)).toMatchObject({ success: true })
  }, 120_000)

  it('refuses to trace on a node without debug_traceCall rather than accept unchecked', async () => {
    const blind = fx.service({
      validation: { mode: 'safe' },
      rpc: {
        call: (method, params) =>
          method === 'debug_traceCall'
            ? Promise.resolve({ error: { code: -32601, message: 'Method not found' } })
            : fx.rpc.call(method, params),
      },
    })
    const account = await breakers.account({})
    await expect(send(blind, await breakers.opOf(account, 'v07'))).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('debug_traceCall failed'),
    })
    await anvil('anvil_mine', ['0x1'])
  }, 120_000)
})
