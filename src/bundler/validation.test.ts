import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
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
import { ruleBreakers } from '../../test/fixtures/bundler/erc7562-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { entryPointAbi } from '../aa/contracts.ts'
import type { Address } from '../types.ts'
import { BundlerChain, type CallOutcome } from './chain.ts'
import { simulateValidation, validationCall, validationOutcome } from './entrypoint.ts'
import type { BundlerService } from './service.ts'
import { simulationsAddress } from './simulations.ts'
import { readAccountState } from './state-reads.ts'
import { TRACE_DISAGREED, traceValidation } from './tracer.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'
import { userOpHash } from './userop.ts'

/**
 * Each ERC-7769 refusal the devnet can produce, from an op built to earn it; the message must
 * say what to change. Only the first backend: refusals never reach the database. v0.7
 * simulations run here through the deployed EntryPointSimulations (dev mode's setting); the
 * other bundler suites run them with the full code override.
 */

describe.each(storageBackends().slice(0, 1))('bundler refusals ($name)', (backend) => {
  let fx: BundlerFixture
  let svc: BundlerService
  let token: Address
  const deployed: Partial<Record<EntryPointVersion, TestAccount>> = {}

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    svc = fx.service({ deploySimulations: true })
    expect(await svc.prepareSimulations(NETWORK)).toBe(simulationsAddress())
    token = await deployToken(fx)
    // One deployed, funded account per version (its first op mined).
    for (const version of ['v07', 'v06'] as const)
      deployed[version] = await deployedAccount(fx, svc, version, token)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const acct = (v: EntryPointVersion) => deployed[v] as TestAccount
  const send = (op: UserOperation) => svc.sendUserOperation(NETWORK, op, fx.entryPoint(op.version).address)
  /** A valid, estimated and signed op of the deployed account of `version`. */
  const good = async (version: EntryPointVersion, nonceKey = 0n) =>
    estimatedAndSigned(
      fx,
      svc,
      acct(version),
      await acct(version).op({ to: token, data: mintData(token), nonceKey }),
    )

  it.each<EntryPointVersion>(['v07', 'v06'])('%s: a signature by another key is -32507', async (version) => {
    const op = await good(version)
    const stranger = privateKeyToAccount(generatePrivateKey())
    const hash = userOpHash(op, fx.entryPoint(version).address, fx.anvil.chainId)
    const forged = { ...op, signature: await stranger.signMessage({ message: { raw: hash } }) }
    await expect(send(forged)).rejects.toMatchObject({
      code: -32507,
      // The reference bundler's phrase (clients match on it), then what to change.
      message: expect.stringMatching(
        /^Invalid UserOp signature or paymaster signature: account (or paymaster )?signature check failed: sign the userOpHash/,
      ),
    })
  })

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: a nonce already used is -32602 naming the next one',
    async (version) => {
      const op = await good(version)
      await expect(send({ ...op, nonce: op.nonce - 1n })).rejects.toMatchObject({
        code: -32602,
        message: expect.stringMatching(/nonce 0 \(0x0\) is already used: the next nonce .* is 1 \(0x1\)/),
      })
    },
  )

  it('too low fees are -32602 naming the minimum', async () => {
    const op = await good('v07')
    await expect(send({ ...op, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/maxFeePerGas 1 .* below the network's current base fee \d+/),
    })
    await expect(send({ ...op, maxPriorityFeePerGas: op.maxFeePerGas + 1n })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('maxPriorityFeePerGas'),
    })
  })

  it('preVerificationGas below the calculated cost is -32602 naming the needed value', async () => {
    const op = await good('v06')
    await expect(send({ ...op, preVerificationGas: 21_000n })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/preVerificationGas 21000 .* needs at least \d+/),
    })
  })

  it('initCode for a deployed sender, or none for an undeployed one, is -32602', async () => {
    const fresh = await TestAccount.create(fx, 'v06')
    const withInit = await fresh.op({ to: token, data: mintData(token) })
    const initCode = withInit.version === 'v06' ? withInit.initCode : '0x'
    await expect(
      send({ ...(await good('v06')), initCode, preVerificationGas: 100_000n } as UserOperation),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('already deployed: remove initCode'),
    })
    await expect(
      send({ ...withInit, initCode: '0x', preVerificationGas: 100_000n } as UserOperation),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('has no code: add initCode'),
    })
  })

  it('an unsupported EntryPoint, or an op of the other version, is -32602', async () => {
    const op = await good('v07')
    await expect(
      svc.sendUserOperation(NETWORK, op, '0x0000000000000000000000000000000000000001'),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('is not supported here; supported:'),
    })
    await expect(svc.sendUserOperation(NETWORK, op, fx.entryPoint('v06').address)).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('takes v06 UserOperations, not v07'),
    })
  })

  it('a paymaster without deposit is -32508 (AA31)', async () => {
    const signer = privateKeyToAccount(generatePrivateKey())
    const paymaster = await fx.deployPaymaster(signer.address)
    const base = await good('v07')
    const op = { ...withPaymaster(base, paymaster, { verification: 100_000n }), preVerificationGas: 100_000n }
    op.paymasterData = await paymasterData(fx, op, signer)
    await expect(send(await acct('v07').sign(op))).rejects.toMatchObject({
      code: -32508,
      message: expect.stringMatching(/^AA31 paymaster deposit too low — .*top up the paymaster deposit/),
    })
  })

  it('a paymaster signature by the wrong key is -32507; an expired paymaster window is -32503', async () => {
    const base = {
      ...withPaymaster(await good('v07'), fx.aa.paymaster, { verification: 100_000n }),
      preVerificationGas: 100_000n,
    }
    const wrongKey = {
      ...base,
      paymasterData: await paymasterData(fx, base, privateKeyToAccount(generatePrivateKey())),
    }
    await expect(send(await acct('v07').sign(wrongKey))).rejects.toMatchObject({
      code: -32507,
      message: expect.stringContaining('paymaster signature check failed'),
    })
    const now = Number((await fx.client.getBlock()).timestamp)
    const expired = {
      ...base,
      paymasterData: await paymasterData(fx, base, fx.paymasterSigner, { validUntil: now - 60 }),
    }
    await expect(send(await acct('v07').sign(expired))).rejects.toMatchObject({
      code: -32503,
      message: expect.stringMatching(/expires at \d+ .* raise validUntil/),
    })
    const notYet = {
      ...base,
      paymasterData: await paymasterData(fx, base, fx.paymasterSigner, { validAfter: now + 3600 }),
    }
    await expect(send(await acct('v07').sign(notYet))).rejects.toMatchObject({
      code: -32503,
      message: expect.stringContaining('not valid before'),
    })
  })

  it('the one-call reads (state-reads.ts) give what the reads one by one give', async () => {
    const chain = new BundlerChain(fx.rpc)
    const ep = fx.entryPoint('v07').address
    const stranger = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
    const cases = [
      { sender: acct('v07').address, key: 0n, factory: null, paymaster: fx.aa.paymaster },
      { sender: acct('v07').address, key: 7n, factory: fx.aa.simpleAccountFactory.v07, paymaster: null },
      { sender: stranger, key: (1n << 192n) - 1n, factory: stranger, paymaster: stranger },
    ]
    for (const q of cases) {
      const one = await readAccountState(chain, { entryPoint: ep, ...q })
      const nonce = BigInt(
        (await fx.client.readContract({
          address: ep,
          abi: entryPointAbi,
          functionName: 'getNonce',
          args: [q.sender, q.key],
        })) as bigint,
      )
      const code = async (a: Address | null) => (a ? (await chain.code(a)) !== '0x' : false)
      expect(one).toEqual({
        senderDeployed: await code(q.sender),
        factoryDeployed: await code(q.factory),
        paymasterDeployed: await code(q.paymaster),
        nonce,
        deposit: q.paymaster
          ? await fx.client.readContract({
              address: ep,
              abi: entryPointAbi,
              functionName: 'balanceOf',
              args: [q.paymaster],
            })
          : 0n,
      })
    }
    expect(
      (await readAccountState(chain, { entryPoint: ep, ...cases[0]!, key: 0n }))?.deposit,
    ).toBeGreaterThan(0n)
  })

  it('the simulation riding along with the one-call reads decodes as the simulation alone', async () => {
    const chain = new BundlerChain(fx.rpc)
    chain.simulations = simulationsAddress()
    for (const version of ['v07', 'v06'] as const) {
      const ep = fx.entryPoint(version)
      const op = await good(version)
      const q = { entryPoint: ep.address, sender: op.sender, key: 0n, factory: null, paymaster: null }
      const both = await readAccountState(chain, q, validationCall(chain, ep, op))
      expect(both?.simulation).toBeDefined()
      expect(both?.nonce).toBe(op.nonce)
      const alone = await simulateValidation(chain, ep, op)
      expect(validationOutcome(op, both?.simulation as CallOutcome)).toEqual(alone)
      // A revert comes back as the EntryPoint's revert data: the same error as alone.
      const bad = { ...op, signature: '0x1234' } as UserOperation
      const badBoth = await readAccountState(chain, q, validationCall(chain, ep, bad))
      expect(badBoth?.simulation?.ok).toBe(false)
      const aloneErr = await simulateValidation(chain, ep, bad).catch((e: unknown) => e)
      expect(() => validationOutcome(bad, badBoth?.simulation as CallOutcome)).toThrow(
        (aloneErr as Error).message,
      )
    }
  })

  it('a paymaster that reverts in validation is -32501 (AA33); an account asking for an aggregator is -32506', async () => {
    const breakers = ruleBreakers(fx)
    const paymaster = await breakers.paymaster({ reverts: true })
    const base = await acct('v07').op({ to: token, data: mintData(token) })
    const op = await acct('v07').sign({
      ...withPaymaster(base, paymaster, { verification: 100_000n }),
      ...(await fx.fees()),
      callGasLimit: 100_000n,
      verificationGasLimit: 150_000n,
      preVerificationGas: 100_000n,
    })
    await expect(send(op)).rejects.toMatchObject({
      code: -32501,
      message: expect.stringMatching(/^AA33 reverted .*check paymasterData/),
    })

    const aggregator = 0xa66en
    for (const version of ['v07', 'v06'] as const) {
      const account = await breakers.account({ validationData: aggregator })
      await expect(send(await breakers.opOf(account, version))).rejects.toMatchObject({
        code: -32506,
        message: expect.stringContaining(`aggregator 0x${aggregator.toString(16).padStart(40, '0')}`),
      })
    }
  })

  it('v0.6: limits that validate but do not prepay the whole op (AA51) are -32500 at acceptance', async () => {
    const chain = new BundlerChain(fx.rpc)
    const ep = fx.entryPoint('v06')
    // Execution capped at 5,000 gas (the mint runs out of it): the op uses all of callGasLimit,
    // then the EntryPoint's own work after it, which only unused verification gas can prepay.
    // maxPriorityFeePerGas = maxFeePerGas: the op pays maxFeePerGas per gas, what its prefund counts.
    const good06 = await good('v06', 51n)
    const base = { ...good06, maxPriorityFeePerGas: good06.maxFeePerGas, callGasLimit: 5_000n }
    const signed = async (verificationGasLimit: bigint) => acct('v06').sign({ ...base, verificationGasLimit })
    // verificationGasLimit = exactly the gas its validation used: validation passes...
    const probe = await simulateValidation(chain, ep, await signed(base.verificationGasLimit))
    const tight = await signed(probe.preOpGas - base.preVerificationGas)
    const sim = await simulateValidation(chain, ep, tight)
    expect(sim.preOpGas - base.preVerificationGas).toBeLessThanOrEqual(tight.verificationGasLimit)
    // ...and the whole op would fail on chain, so it is refused, not accepted and dropped later.
    await expect(send(tight)).rejects.toMatchObject({
      code: -32500,
      message: expect.stringMatching(/^AA51 prefund below actualGasCost .*raise verificationGasLimit/),
    })
    // The same op with room in its limits is accepted.
    await expect(send(await signed(tight.verificationGasLimit + 50_000n))).resolves.toMatch(
      /^0x[0-9a-f]{64}$/,
    )
  })

  it('a trace that ends unlike its simulation (the op mined between them) is the error validate retries', async () => {
    const chain = new BundlerChain(fx.rpc)
    const ep = fx.entryPoint('v07')
    const op = await good('v07', 52n)
    expect((await simulateValidation(chain, ep, op)).sigFailed).toBeNull()
    await minedReceipt(svc, await send(op))
    // Now the nonce is spent (AA25): the trace no longer ends as the simulation did.
    await expect(traceValidation(chain, ep, op)).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('ended differently from the simulation'),
      data: TRACE_DISAGREED,
    })
  })

  it('validation that reverts in the account is -32500 with the AA reason', async () => {
    const op = await good('v07')
    // A malformed signature makes SimpleAccount's ECDSA.recover revert: AA23.
    await expect(send({ ...op, signature: '0x1234' })).rejects.toMatchObject({
      code: -32500,
      message: expect.stringMatching(/^AA23 reverted/),
    })
    await expect(send({ ...op, verificationGasLimit: 1_000n })).rejects.toMatchObject({
      code: -32500,
      message: expect.stringMatching(/^AA(23|26)/),
    })
  })
})
