import { concat, encodeFunctionData, pad, parseEther, toHex } from 'viem'
import { getUserOperationHash } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expect, it } from 'vitest'
import { type Json, walletsFixture } from '../../test/fixtures/wallets/wallets-fixture.ts'
import { anvilNetwork, startTestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { ENTRY_POINT_V07, entryPointV07HandleOpsAbi, simpleAccountFactoryAbi } from '../aa/contracts.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { rpc } from '../devnet/multicall3.ts'
import { parseConfig } from '../server/config-schema.ts'
import type { Address, Hash } from '../types.ts'

/**
 * Smart wallets reaching the chain: deployed through the EntryPoint or around it, undone by a
 * reorg, and the start-up check of the configured ERC-4337 contracts. Creating and listing them
 * is wallets.test.ts.
 */

describeEachStorage('smart wallet deployments on $name', (backend) => {
  const fx = walletsFixture(backend)
  const { api, create, synced, dev } = fx

  it('a UserOperation with initCode sent straight to EntryPoint.handleOps deploys the wallet', async () => {
    const { anvil, storage, aa, client, keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey())
    const salt = 3n
    const created = await create(keyA, { owner: owner.address, chain: 'ethereum-devnet', salt: '3' })
    const sender = created.body.address as Address
    const before = await api(keyA, 'GET', `/wallets/${sender}`)
    expect(before.body.status).toBe('counterfactual')
    expect(before.body).not.toHaveProperty('nonce')
    expect(before.body).not.toHaveProperty('deploy_tx')
    await rpc(anvil.url, 'anvil_setBalance', [sender, toHex(parseEther('1'))])

    const factoryData = encodeFunctionData({
      abi: simpleAccountFactoryAbi,
      functionName: 'createAccount',
      args: [owner.address, salt],
    })
    const gas = {
      callGasLimit: 100_000n,
      verificationGasLimit: 1_000_000n,
      preVerificationGas: 60_000n,
      maxFeePerGas: parseEther('20', 'gwei'),
      maxPriorityFeePerGas: parseEther('1', 'gwei'),
    }
    const userOpHash = getUserOperationHash({
      userOperation: {
        sender,
        nonce: 0n,
        factory: aa.simpleAccountFactory.v07,
        factoryData,
        callData: '0x',
        ...gas,
        signature: '0x',
      },
      entryPointAddress: ENTRY_POINT_V07,
      entryPointVersion: '0.7',
      chainId: anvil.chainId,
    })
    const packed = {
      sender,
      nonce: 0n,
      initCode: concat([aa.simpleAccountFactory.v07, factoryData]),
      callData: '0x' as const,
      accountGasLimits: concat([
        pad(toHex(gas.verificationGasLimit), { size: 16 }),
        pad(toHex(gas.callGasLimit), { size: 16 }),
      ]),
      preVerificationGas: gas.preVerificationGas,
      gasFees: concat([
        pad(toHex(gas.maxPriorityFeePerGas), { size: 16 }),
        pad(toHex(gas.maxFeePerGas), { size: 16 }),
      ]),
      paymasterAndData: '0x' as const,
      signature: await owner.signMessage({ message: { raw: userOpHash } }),
    }
    // The EntryPoint agrees on the hash the owner signed.
    const onChainHash = await client.readContract({
      address: ENTRY_POINT_V07,
      abi: entryPointV07HandleOpsAbi,
      functionName: 'getUserOpHash',
      args: [packed],
    })
    expect(onChainHash).toBe(userOpHash)
    const txHash = await dev().writeContract({
      address: ENTRY_POINT_V07,
      abi: entryPointV07HandleOpsAbi,
      functionName: 'handleOps',
      args: [[packed], DEV_ACCOUNT],
      chain: null,
      gas: 3_000_000n,
    })
    const receipt = await client.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 })
    expect(receipt.status).toBe('success')
    const block = await client.getBlock({ blockNumber: receipt.blockNumber })
    await synced()

    const after = await api(keyA, 'GET', `/wallets/${sender}`)
    expect(after.status).toBe(200)
    expect(after.body).toEqual({
      address: sender,
      owner: owner.address.toLowerCase(),
      chain: 'ethereum-devnet',
      status: 'deployed',
      factory: aa.simpleAccountFactory.v07,
      nonce: 1,
      created_at: created.body.created_at,
      deployed_at: new Date(Number(block.timestamp) * 1000).toISOString(),
      deploy_tx: txHash,
    })
    const listed = (await api(keyA, 'GET', '/wallets?limit=100')).body.wallets as Json[]
    expect(listed.find((w) => w.address === sender)?.status).toBe('deployed')
    // Recorded from the EntryPoint's AccountDeployed event by the indexer consumer, durably.
    const row = await storage.db
      .selectFrom('wallet_deployments')
      .selectAll()
      .where('address', '=', sender)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({ source: 'entrypoint', tx_hash: txHash, network: 'ethereum-devnet' })
  })

  it('sees deployments that bypass the EntryPoint, before and after the wallet is created here', async () => {
    const { aa, client, keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const deploy = async (salt: bigint): Promise<Hash> => {
      const hash = await dev().writeContract({
        address: aa.simpleAccountFactory.v07,
        abi: simpleAccountFactoryAbi,
        functionName: 'createAccount',
        args: [owner, salt],
        chain: null,
        gas: 1_000_000n,
      })
      await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      return hash
    }
    // Created here first, deployed by a direct factory call: the proxy's own log marks it.
    const w1 = (await create(keyA, { owner, chain: 'ethereum-devnet', salt: '1' })).body.address as Address
    const tx1 = await deploy(1n)
    await synced()
    const r1 = await api(keyA, 'GET', `/wallets/${w1}`)
    expect(r1.body).toMatchObject({ status: 'deployed', deploy_tx: tx1, nonce: 0 })
    // Deployed before anyone asked for it here: found by its code, its transaction by its log.
    const tx2 = await deploy(2n)
    await synced()
    const c2 = await create(keyA, { owner, chain: 'ethereum-devnet', salt: '2' })
    expect(c2.body.status).toBe('deployed')
    expect((await api(keyA, 'GET', `/wallets/${c2.body.address}`)).body).toMatchObject({
      status: 'deployed',
      deploy_tx: tx2,
    })
  })

  it('refuses to start when a configured ERC-4337 contract has no code, naming the field', async () => {
    const { anvil, storage, aa } = fx
    const nowhere = '0x00000000000000000000000000000000000d0d0d'
    await expect(
      startTestHalyard({
        networks: [
          anvilNetwork(anvil, {
            indexer: { enabled: false },
            accountAbstraction: {
              entryPoints: { v07: ENTRY_POINT_V07 },
              simpleAccountFactory: { v07: nowhere },
            },
          }),
        ],
        storage,
      }),
    ).rejects.toThrow(
      /networks\[ethereum\/devnet\]\.accountAbstraction\.simpleAccountFactory\.v07: no contract code at 0x0+d0d0d/,
    )
    // A factory whose addresses differ from the local derivation (here the v0.6 one) is refused too.
    await expect(
      startTestHalyard({
        networks: [
          anvilNetwork(anvil, {
            indexer: { enabled: false },
            accountAbstraction: { simpleAccountFactory: { v07: aa.simpleAccountFactory.v06 } },
          }),
        ],
        storage,
      }),
    ).rejects.toThrow(/simpleAccountFactory\.v07: .* is not a SimpleAccountFactory v0\.7\.0/)
    expect(() =>
      parseConfig({ networks: [{ ...anvilNetwork(anvil), accountAbstraction: { paymaster: '0x12' } }] }),
    ).toThrow(/networks\[0\]\.accountAbstraction\.paymaster: must be a 0x-prefixed 20-byte hex address/)
  })

  it('undoes a deployment whose block a reorg removed', async () => {
    const { anvil, storage, h, aa, client, keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const w = (await create(keyA, { owner, chain: 'ethereum-devnet', salt: '9' })).body.address as Address
    const hash = await dev().writeContract({
      address: aa.simpleAccountFactory.v07,
      abi: simpleAccountFactoryAbi,
      functionName: 'createAccount',
      args: [owner, 9n],
      chain: null,
      gas: 1_000_000n,
    })
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    await synced()
    expect((await api(keyA, 'GET', `/wallets/${w}`)).body.status).toBe('deployed')
    // Drop that block and replace it with an empty one at the same height.
    await rpc(anvil.url, 'anvil_rollback', [1])
    // anvil puts the rolled-back transaction back in its pool: drop it so the new block is empty.
    await rpc(anvil.url, 'anvil_dropTransaction', [hash])
    await rpc(anvil.url, 'evm_mine', [])
    const replaced = await client.getBlock({ blockNumber: receipt.blockNumber })
    expect(replaced.hash).not.toBe(receipt.blockHash)
    // The cursor already stood at that height: wait (bounded) until it stands on the new block.
    for (let i = 0; i < 200; i++) {
      const cursor = await h.halyard.services.indexer.cursor('ethereum-devnet')
      if (cursor?.hash === replaced.hash) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect((await h.halyard.services.indexer.cursor('ethereum-devnet'))?.hash).toBe(replaced.hash)
    const row = await storage.db
      .selectFrom('wallet_deployments')
      .selectAll()
      .where('address', '=', w)
      .executeTakeFirst()
    expect(row).toBeUndefined()
    expect((await api(keyA, 'GET', `/wallets/${w}`)).body.status).toBe('counterfactual')
  })
})
