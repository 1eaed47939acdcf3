import { decodeEventLog, parseAbi, recoverMessageAddress } from 'viem'
import { entryPoint07Abi } from 'viem/account-abstraction'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  ACCOUNT,
  type SponsorFixture,
  sponsorBody,
  startSponsorFixture,
  withSponsorship,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import type { EntryPointVersion, UserOperation } from '../bundler/types.ts'
import { packV07, v06Struct } from '../bundler/userop.ts'
import type { Address, Hex } from '../types.ts'
import { STUB_SIGNATURE, v06PaymasterHash, v07PaymasterHash } from './paymaster-signer.ts'
import type { SponsorService } from './sponsor-service.ts'
import { USER_OPERATION_EVENT } from './sponsor-settlement.ts'

const getHashV07 = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function getHash(PackedUserOperation userOp, uint48 validUntil, uint48 validAfter) view returns (bytes32)',
])
const getHashV06 = parseAbi([
  'struct UserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; uint256 callGasLimit; uint256 verificationGasLimit; uint256 preVerificationGas; uint256 maxFeePerGas; uint256 maxPriorityFeePerGas; bytes paymasterAndData; bytes signature; }',
  'function getHash(UserOperation userOp, uint48 validUntil, uint48 validAfter) view returns (bytes32)',
])

describe('VerifyingPaymaster signing on-chain', () => {
  const backend = storageBackends()[0]
  if (!backend) throw new Error('no storage backend')
  let fx: SponsorFixture
  let svc: SponsorService
  let policyId: string

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    svc = fx.sponsorService()
    policyId = (
      await fx.policyService().create(ACCOUNT, { name: 'all', chain: 'ethereum-devnet', rules: {} })
    ).id
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  it('the stub signature is well formed and recovers to an address that is not the signer', async () => {
    expect((STUB_SIGNATURE.length - 2) / 2).toBe(65)
    const who = await recoverMessageAddress({
      message: { raw: `0x${'11'.repeat(32)}` },
      signature: STUB_SIGNATURE,
    })
    expect(who.toLowerCase()).not.toBe(fx.paymasterSigner.address.toLowerCase())
  })

  it('v0.7: the local hash equals the paymaster contract getHash', async () => {
    const acct = await TestAccount.create(fx, 'v07')
    const op = withSponsorship(await fx.mintOp(acct), {
      paymaster: fx.aa.paymaster,
      paymasterData: `0x${'00'.repeat(64)}${STUB_SIGNATURE.slice(2)}`,
      paymasterVerificationGasLimit: '0xea60',
      paymasterPostOpGasLimit: '0x0',
    } as never)
    if (op.version !== 'v07') throw new Error('v07 op expected')
    const onChain = await fx.client.readContract({
      address: fx.aa.paymaster,
      abi: getHashV07,
      functionName: 'getHash',
      args: [packV07(op), 1_900_000_000, 12],
    })
    expect(v07PaymasterHash(op, fx.anvil.chainId, fx.aa.paymaster, 1_900_000_000, 12)).toBe(onChain)
  })

  it('v0.6: the local hash (packed op head, senderNonce) equals the paymaster contract getHash', async () => {
    const acct = await TestAccount.create(fx, 'v06')
    const op = await fx.mintOp(acct)
    if (op.version !== 'v06') throw new Error('v06 op expected')
    const nonceOf = parseAbi(['function senderNonce(address) view returns (uint256)'])
    const senderNonce = await fx.client.readContract({
      address: fx.paymasterV06,
      abi: nonceOf,
      functionName: 'senderNonce',
      args: [op.sender],
    })
    const shaped = {
      ...op,
      paymasterAndData: `${fx.paymasterV06}${'00'.repeat(64)}${STUB_SIGNATURE.slice(2)}` as Hex,
    }
    const onChain = await fx.client.readContract({
      address: fx.paymasterV06,
      abi: getHashV06,
      functionName: 'getHash',
      args: [v06Struct(shaped), 1_900_000_000, 12],
    })
    expect(v06PaymasterHash(op, fx.anvil.chainId, fx.paymasterV06, senderNonce, 1_900_000_000, 12)).toBe(
      onChain,
    )
  })

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: a zero-ETH account deploys and calls through handleOps with the sponsor result; the paymaster pays',
    async (version) => {
      const acct = await TestAccount.create(fx, version)
      const op = await fx.mintOp(acct)
      const result = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, policyId))
      expect(result.paymaster).toBe(version === 'v07' ? fx.aa.paymaster : fx.paymasterV06)
      expect(result.paymasterData).toMatch(/^0x[0-9a-f]+$/)
      expect(BigInt(result.paymasterVerificationGasLimit)).toBeGreaterThan(0n)
      expect(result.paymasterPostOpGasLimit).toMatch(/^0x[0-9a-f]+$/)
      expect(result.sponsored_gas_usd).toMatch(/^\d+(\.\d+)?$/)
      const signed = await acct.sign(withSponsorship(op, result))
      const balanceBefore = await fx.client.getBalance({ address: acct.address })
      expect(balanceBefore).toBe(0n)
      const receipt = await fx.handleOps(signed)
      expect(receipt.status).toBe('success')
      const event = userOpEvent(receipt.logs, fx.aa.entryPoints[version])
      expect(event.success).toBe(true)
      expect(event.paymaster.toLowerCase()).toBe(result.paymaster)
      expect(await acct.deployed()).toBe(true)
      expect(await fx.client.getBalance({ address: acct.address })).toBe(0n)
    },
  )

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: callData changed after the paymaster signed fails validation with AA34',
    async (version) => {
      const acct = await TestAccount.create(fx, version)
      const op = await fx.mintOp(acct)
      const result = await svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, policyId))
      const tampered: UserOperation = {
        ...withSponsorship(op, result),
        callData: (await fx.mintOp(acct, { amount: 8n })).callData,
      }
      const reason = await fx.handleOpsRevert(await acct.sign(tampered))
      expect(reason).toContain('AA34')
      // The untampered op passes the same check (the failure is the tampering, not the setup).
      const good = await acct.sign(withSponsorship(op, result))
      expect((await fx.handleOps(good)).status).toBe('success')
    },
  )
})

function userOpEvent(logs: readonly { address: string; topics: readonly Hex[]; data: Hex }[], ep: Address) {
  for (const l of logs) {
    if (l.address.toLowerCase() !== ep || l.topics[0] !== USER_OPERATION_EVENT) continue
    {
      const e = decodeEventLog({
        abi: entryPoint07Abi,
        eventName: 'UserOperationEvent',
        topics: l.topics as [Hex, ...Hex[]],
        data: l.data,
      })
      return e.args
    }
  }
  throw new Error('no UserOperationEvent')
}
