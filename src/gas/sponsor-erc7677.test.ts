import { createSmartAccountClient } from 'permissionless'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import { createPublicClient, custom, defineChain, http, toHex } from 'viem'
import { createPaymasterClient } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintData, TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  ACCOUNT,
  NETWORK,
  type SponsorFixture,
  startSponsorFixture,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { entryPointAbi } from '../aa/contracts.ts'
import { parseUserOperation } from '../bundler/schema.ts'
import type { BundlerService } from '../bundler/service.ts'
import type { EntryPointVersion } from '../bundler/types.ts'
import { HalyardError } from '../errors.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { SponsorService } from './sponsor-service.ts'
import type { SponsorSettlement } from './sponsor-settlement.ts'

/**
 * ERC-7677 as permissionless.js uses it, unchanged: a smart account with zero ETH sends an op
 * through `createSmartAccountClient` with our paymaster methods as `paymaster` and
 * `paymasterContext: { policy_id }`. The transports call the services in this process (the
 * HTTP routes are wired elsewhere): the bundler's for `eth_*`, the sponsor service's for `pm_*`.
 */

function bundlerTransport(fx: SponsorFixture, bundler: BundlerService) {
  return custom({
    async request({ method, params }: { method: string; params?: unknown }) {
      const p = (params ?? []) as unknown[]
      const version = () => bundler.entryPointVersion(NETWORK, p[1] as Address)
      switch (method) {
        case 'eth_supportedEntryPoints':
          return bundler.supportedEntryPoints(NETWORK)
        case 'eth_estimateUserOperationGas':
          return bundler.estimateUserOperationGas(
            NETWORK,
            parseUserOperation(p[0], version(), { estimating: true }),
            p[1] as Address,
          )
        case 'eth_sendUserOperation':
          return bundler.sendUserOperation(NETWORK, parseUserOperation(p[0], version()), p[1] as Address)
        case 'eth_getUserOperationReceipt': {
          const r = await bundler.getUserOperationReceipt(NETWORK, p[0] as Hash)
          if (!r) await bundler.bundleNow(NETWORK)
          return r
        }
        default: {
          const out = await fx.rpc.call(method, p)
          if (out.error) throw Object.assign(new Error(out.error.message), { code: out.error.code })
          return out.result
        }
      }
    },
  })
}

function paymasterTransport(svc: SponsorService) {
  return custom({
    async request({ method, params }: { method: string; params?: unknown }) {
      if (method === 'pm_getPaymasterStubData')
        return svc.getPaymasterStubData({ accountId: ACCOUNT }, NETWORK, params)
      if (method === 'pm_getPaymasterData')
        return svc.getPaymasterData({ accountId: ACCOUNT }, NETWORK, params)
      throw Object.assign(new Error(`${method} is not a paymaster method`), { code: -32601 })
    },
  })
}

describe('ERC-7677 paymaster with permissionless.js', () => {
  let fx: SponsorFixture
  let svc: SponsorService
  let bundler: BundlerService
  let settlement: SponsorSettlement

  beforeAll(async () => {
    const [pglite] = storageBackends()
    if (!pglite) throw new Error('no storage backend')
    fx = await startSponsorFixture(pglite)
    svc = fx.sponsorService()
    bundler = fx.service()
    settlement = fx.settlement(svc)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: a zero-ETH SimpleAccount sends a sponsored op; the deposit pays; the policy shows the settled spend',
    async (version) => {
      const policy = await fx.policyService().create(ACCOUNT, {
        name: 'permissionless',
        chain: NETWORK,
        rules: {
          allowed_contracts: [fx.token],
          allowed_methods: ['mint(address,uint256)'],
          max_gas_usd: '100',
        },
      })
      // permissionless needs a client that knows its chain (nonce keys are per chain).
      const chain = defineChain({
        id: fx.anvil.chainId,
        name: 'devnet',
        nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
        rpcUrls: { default: { http: [fx.anvil.url] } },
      })
      const publicClient = createPublicClient({ chain, transport: http(fx.anvil.url) })
      const account = await toSimpleSmartAccount({
        client: publicClient,
        owner: privateKeyToAccount(generatePrivateKey()),
        factoryAddress: fx.aa.simpleAccountFactory[version],
        entryPoint: { address: fx.aa.entryPoints[version], version: version === 'v06' ? '0.6' : '0.7' },
      })
      const address = (await account.getAddress()).toLowerCase() as Address
      const client = createSmartAccountClient({
        account,
        chain,
        client: publicClient,
        bundlerTransport: bundlerTransport(fx, bundler),
        paymaster: createPaymasterClient({ transport: paymasterTransport(svc) }),
        paymasterContext: { policy_id: policy.id },
      })
      const ep = fx.aa.entryPoints[version]
      const pm = version === 'v07' ? fx.aa.paymaster : fx.paymasterV06
      const deposit = () =>
        fx.client.readContract({ address: ep, abi: entryPointAbi, functionName: 'balanceOf', args: [pm] })
      const before = await deposit()
      const hash = await client.sendUserOperation({
        calls: [
          {
            to: fx.token,
            data: mintData(address, 5n),
          },
        ],
      })
      const receipt = await client.waitForUserOperationReceipt({ hash, pollingInterval: 50 })
      expect(receipt.success).toBe(true)
      expect(receipt.paymaster?.toLowerCase()).toBe(pm)
      expect(await fx.client.getBalance({ address })).toBe(0n)
      expect(before - (await deposit())).toBe(receipt.actualGasCost)
      while (await settlement.pollOnce(NETWORK)) {}
      expect((await fx.policyService().get({ accountId: ACCOUNT }, policy.id)).spend).toMatchObject({
        operations: 1,
        settled_operations: 1,
        reserved_wei: '0',
        settled_wei: receipt.actualGasCost.toString(),
      })
    },
  )

  it('stub data: realistic gas limits, a 65-byte signature, isFinal false; nothing reserved', async () => {
    const policy = await fx.policyService().create(ACCOUNT, { name: 'stub', chain: NETWORK, rules: {} })
    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)
    const raw = { sender: op.sender, nonce: toHex(op.nonce), callData: op.callData }
    const stub = (await svc.getPaymasterStubData({ accountId: ACCOUNT }, NETWORK, [
      raw,
      fx.aa.entryPoints.v07,
      toHex(fx.anvil.chainId),
      { policy_id: policy.id },
    ])) as {
      paymaster: Address
      paymasterData: Hex
      paymasterVerificationGasLimit: Hex
      paymasterPostOpGasLimit: Hex
      isFinal: boolean
    }
    expect(stub.paymaster).toBe(fx.aa.paymaster)
    expect((stub.paymasterData.length - 2) / 2).toBe(64 + 65)
    expect(BigInt(stub.paymasterVerificationGasLimit)).toBeGreaterThanOrEqual(40_000n)
    expect(stub.paymasterPostOpGasLimit).toBe('0x0')
    expect(stub.isFinal).toBe(false)
    expect((await fx.policyService().get({ accountId: ACCOUNT }, policy.id)).spend.operations).toBe(0)
    const v06 = (await svc.getPaymasterStubData({ accountId: ACCOUNT }, NETWORK, [
      { ...raw, initCode: '0x' },
      fx.aa.entryPoints.v06,
      fx.anvil.chainId,
      { policyId: policy.id },
    ])) as { paymasterAndData: Hex }
    expect((v06.paymasterAndData.length - 2) / 2).toBe(20 + 64 + 65)
    expect(v06.paymasterAndData.slice(0, 42)).toBe(fx.paymasterV06)
  })

  it('refuses a wrong chain id, a missing policy_id, an unknown EntryPoint and a paused policy', async () => {
    const policy = await fx.policyService().create(ACCOUNT, { name: 'bad', chain: NETWORK, rules: {} })
    const acct = await TestAccount.create(fx, 'v07')
    const raw = { sender: acct.address, nonce: '0x0', callData: '0x' }
    const call = (params: unknown[]) => svc.getPaymasterStubData({ accountId: ACCOUNT }, NETWORK, params)
    const message = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => null,
        (e: unknown) => e,
      )
      if (!(err instanceof HalyardError)) throw new Error(`expected a refusal, got ${String(err)}`)
      return err.message
    }
    const ep = fx.aa.entryPoints.v07
    expect(await message(call([raw, ep, '0x1', { policy_id: policy.id }]))).toBe(
      `chainId (params[2]) is 0x1; this endpoint serves chain ${toHex(fx.anvil.chainId)}`,
    )
    expect(await message(call([raw, ep, fx.anvil.chainId, {}]))).toContain('policy_id')
    expect(await message(call([raw, fx.token, fx.anvil.chainId, { policy_id: policy.id }]))).toContain(
      'is not an EntryPoint sponsored on ethereum-devnet',
    )
    await fx.policyService().update({ accountId: ACCOUNT }, policy.id, { status: 'paused' })
    expect(await message(call([raw, ep, fx.anvil.chainId, { policy_id: policy.id }]))).toContain('is paused')
  })
})
