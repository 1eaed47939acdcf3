import { getEntryPoint, toSmartContractAccount } from '@aa-sdk/core'
import { alchemy, createAlchemySmartAccountClient } from '@account-kit/infra'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import { concat, createPublicClient, defineChain, encodeFunctionData, type Hex, http, toHex } from 'viem'
import { entryPoint07Abi } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintData } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  NETWORK,
  type SponsorFixture,
  startDevHalyard,
  startSponsorFixture,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { call, postRpc, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { simpleAccountAbi, simpleAccountFactoryAbi } from '../aa/contracts.ts'
import type { AccountAbstractionDeployment } from '../devnet/account-abstraction.ts'
import type { Address } from '../types.ts'

/**
 * `@account-kit/infra` unchanged but for its `rpcUrl` (the compat root, key in the path) and a
 * Halyard policy id as `policyId`: `createAlchemySmartAccountClient` sends a sponsored v0.7
 * UserOperation from a zero-ETH SimpleAccount on anvil, through rundler_maxPriorityFeePerGas,
 * alchemy_requestGasAndPaymasterAndData and the bundler methods, all at that one URL.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

/** SimpleAccount's ECDSA check accepts this shape without reverting (permissionless' dummy). */
const DUMMY_SIGNATURE = `0x${'f'.repeat(31)}0${'0'.repeat(32)}7${'a'.repeat(63)}1c` as Hex

describe('@account-kit/infra against the compat root', () => {
  let fx: SponsorFixture
  let h: TestHalyard
  let dep: AccountAbstractionDeployment
  let key: string
  let root: string

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    ;({ h, dep, key } = await startDevHalyard(fx, 'account-kit'))
    root = `${h.baseUrl}/alchemy/eth-devnet/v2/${key}`
  }, 120_000)
  afterAll(async () => {
    await h?.close()
    await fx?.close()
  })

  it('rundler_maxPriorityFeePerGas answers a hex tip on the compat root and the bundler endpoint', async () => {
    const viaRoot = await postRpc(root, undefined, call('rundler_maxPriorityFeePerGas'))
    const viaBundler = await postRpc(
      `${h.baseUrl}/bundler/ethereum/devnet`,
      key,
      call('rundler_maxPriorityFeePerGas'),
    )
    for (const r of [viaRoot, viaBundler]) {
      expect(r.status).toBe(200)
      expect(r.json.result).toMatch(/^0x[0-9a-f]+$/)
      expect(BigInt(r.json.result as string)).toBeGreaterThan(0n)
    }
  })

  it('sends a sponsored UserOperation with only rpcUrl changed', async () => {
    const created = await fetch(`${h.baseUrl}/gas/policies`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'account-kit', chain: NETWORK, rules: { allowed_contracts: [fx.token] } }),
    })
    expect(created.status).toBe(201)
    const policyId = ((await created.json()) as { id: string }).id

    const chain = defineChain({
      id: fx.anvil.chainId,
      name: 'halyard devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [root] }, alchemy: { http: [root] } },
    })
    const transport = alchemy({ rpcUrl: root })
    const owner = privateKeyToAccount(generatePrivateKey())
    const factory = dep.config.simpleAccountFactory?.v07 as Address
    const account = await toSmartContractAccount({
      source: 'SimpleAccount',
      transport,
      chain,
      entryPoint: getEntryPoint(chain, { version: '0.7.0' }),
      getAccountInitCode: async () =>
        concat([
          factory,
          encodeFunctionData({
            abi: simpleAccountFactoryAbi,
            functionName: 'createAccount',
            args: [owner.address, 0n],
          }),
        ]),
      getDummySignature: () => DUMMY_SIGNATURE,
      encodeExecute: async ({ target, value, data }) =>
        encodeFunctionData({
          abi: simpleAccountAbi,
          functionName: 'execute',
          args: [target, value ?? 0n, data],
        }),
      signUserOperationHash: (hash) => owner.signMessage({ message: { raw: hash } }),
      signMessage: ({ message }) => owner.signMessage({ message }),
      signTypedData: (td) => owner.signTypedData(td as Parameters<typeof owner.signTypedData>[0]),
    })
    const address = account.address.toLowerCase() as Address
    const client = createAlchemySmartAccountClient({ transport, chain, account, policyId })
    const deposit = () =>
      fx.client.readContract({
        address: fx.aa.entryPoints.v07,
        abi: entryPoint07Abi,
        functionName: 'balanceOf',
        args: [dep.config.paymaster as Address],
      })
    const before = await deposit()
    const { hash } = await client.sendUserOperation({ uo: { target: fx.token, data: mintData(address, 3n) } })
    const txHash = await client.waitForUserOperationTransaction({
      hash,
      retries: { maxRetries: 60, intervalMs: 200, multiplier: 1 },
    })
    const receipt = await client.getUserOperationReceipt(hash)
    expect(receipt?.success).toBe(true)
    expect(receipt?.receipt.transactionHash).toBe(txHash)
    expect(receipt?.paymaster?.toLowerCase()).toBe(dep.config.paymaster)
    expect(await fx.client.getBalance({ address })).toBe(0n)
    expect(before - (await deposit())).toBe(BigInt(receipt?.actualGasCost ?? 0))
  }, 120_000)

  it('v0.6: answers paymasterAndData with gas and fees the bundler then accepts as signed', async () => {
    const created = await fetch(`${h.baseUrl}/gas/policies`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'v06', chain: NETWORK, rules: { allowed_contracts: [fx.token] } }),
    })
    const policyId = ((await created.json()) as { id: string }).id
    const chain = defineChain({
      id: fx.anvil.chainId,
      name: 'devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [fx.anvil.url] } },
    })
    const account = await toSimpleSmartAccount({
      client: createPublicClient({ chain, transport: http(fx.anvil.url) }),
      owner: privateKeyToAccount(generatePrivateKey()),
      factoryAddress: fx.aa.simpleAccountFactory.v06,
      entryPoint: { address: fx.aa.entryPoints.v06, version: '0.6' },
    })
    const sender = account.address.toLowerCase() as Address
    const { factory, factoryData } = await account.getFactoryArgs()
    const op = {
      sender,
      nonce: toHex(await account.getNonce()),
      initCode: concat([factory as Hex, factoryData as Hex]),
      callData: await account.encodeCalls([{ to: fx.token, data: mintData(sender, 2n) }]),
    }
    const asked = await postRpc(
      root,
      undefined,
      call('alchemy_requestGasAndPaymasterAndData', [
        {
          policyId,
          entryPoint: fx.aa.entryPoints.v06,
          userOperation: op,
          dummySignature: await account.getStubSignature(),
          overrides: { callGasLimit: { multiplier: 1.5 } },
        },
      ]),
    )
    const r = asked.json.result as Record<string, Hex>
    expect(Object.keys(r).sort()).toEqual(
      [
        'callGasLimit',
        'maxFeePerGas',
        'maxPriorityFeePerGas',
        'paymasterAndData',
        'preVerificationGas',
        'verificationGasLimit',
      ].sort(),
    )
    const full: Record<string, Hex> = { ...op, ...r }
    const signature = await account.signUserOperation({
      sender,
      nonce: BigInt(op.nonce),
      initCode: full.initCode as Hex,
      callData: full.callData as Hex,
      callGasLimit: BigInt(full.callGasLimit as Hex),
      verificationGasLimit: BigInt(full.verificationGasLimit as Hex),
      preVerificationGas: BigInt(full.preVerificationGas as Hex),
      maxFeePerGas: BigInt(full.maxFeePerGas as Hex),
      maxPriorityFeePerGas: BigInt(full.maxPriorityFeePerGas as Hex),
      paymasterAndData: full.paymasterAndData as Hex,
      signature: '0x',
    })
    const sent = await postRpc(
      root,
      undefined,
      call('eth_sendUserOperation', [{ ...full, signature }, fx.aa.entryPoints.v06]),
    )
    expect(sent.json.error).toBeUndefined()
    const receipt = await until('the v0.6 op to be mined', async () => {
      const got = await postRpc(root, undefined, call('eth_getUserOperationReceipt', [sent.json.result]))
      return got.json.result as { success: boolean; paymaster: string } | null
    })
    expect(receipt.success).toBe(true)
    // The paymaster is the one the answer put first in paymasterAndData.
    expect(receipt.paymaster.toLowerCase()).toBe(r.paymasterAndData?.slice(0, 42).toLowerCase())
    expect(await fx.client.getBalance({ address: sender })).toBe(0n)
  }, 120_000)

  it('refuses a policy it does not know with an error naming it, and ERC-20 gas payment as not served', async () => {
    const r = await postRpc(
      root,
      undefined,
      call('alchemy_requestGasAndPaymasterAndData', [
        {
          policyId: 'gp_nope',
          entryPoint: fx.aa.entryPoints.v07,
          userOperation: { sender: fx.token, nonce: '0x0', callData: '0x' },
          dummySignature: DUMMY_SIGNATURE,
        },
      ]),
    )
    expect(r.json.error).toMatchObject({ code: -32602 })
    const erc20 = await postRpc(
      root,
      undefined,
      call('alchemy_requestGasAndPaymasterAndData', [
        {
          policyId: 'gp_x',
          entryPoint: fx.aa.entryPoints.v07,
          userOperation: {},
          dummySignature: '0x',
          erc20Context: { tokenAddress: fx.token },
        },
      ]),
    )
    expect(erc20.json.error).toMatchObject({ code: -32602 })
    expect((erc20.json.error as { message: string }).message).toMatch(
      /params\[0\]\.erc20Context: ERC-20 gas payment is not served/,
    )
  })
})
