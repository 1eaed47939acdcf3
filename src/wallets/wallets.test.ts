import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import {
  concat,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  type PublicClient,
  pad,
  parseEther,
  toHex,
} from 'viem'
import { getUserOperationHash } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { ENTRY_POINT_V07, entryPointV07HandleOpsAbi, simpleAccountFactoryAbi } from '../aa/contracts.ts'
import { parseConfig } from '../config/file.ts'
import { type DevAccountAbstraction, ensureAccountAbstraction } from '../devnet/account-abstraction.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'

type Json = Record<string, unknown>

const ZERO = `0x${'0'.repeat(40)}`
/** A checksummed address with the case of its first letter flipped: a wrong EIP-55 checksum. */
const badChecksum = (a: string) => {
  const i = a.slice(2).search(/[a-fA-F]/) + 2
  const c = a[i]!
  return a.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + a.slice(i + 1)
}

describeEachStorage('smart wallets on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let aa: DevAccountAbstraction
  let client: PublicClient
  let keyA: string
  const dev = () => createWalletClient({ transport: http(anvil.url), account: DEV_ACCOUNT })

  const api = async (key: string, method: 'GET' | 'POST', p: string, body?: unknown) => {
    const res = await fetch(`${h.baseUrl}${p}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Json }
  }
  const create = (key: string, body: unknown) => api(key, 'POST', '/wallets/create', body)
  const synced = async () => {
    // Straight from the node: viem's getBlockNumber answers from a cache for a few seconds.
    const head = BigInt((await rpc(anvil.url, 'eth_blockNumber', [])) as string)
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
  }
  const onChainAddress = (owner: Address, salt: bigint) =>
    client.readContract({
      address: aa.simpleAccountFactory.v07,
      abi: simpleAccountFactoryAbi,
      functionName: 'getAddress',
      args: [owner, salt],
    })

  beforeAll(async () => {
    anvil = await startAnvil()
    client = createPublicClient({ transport: http(anvil.url) })
    aa = (await ensureAccountAbstraction(anvil.url, mkdtempSync(path.join(tmpdir(), 'halyard-aa-')))).config
    storage = await backend.open()
    h = await startTestHalyard({
      networks: [
        anvilNetwork(anvil, { accountAbstraction: aa }),
        // The same node under a second name, to show the `chain` filter (not indexed).
        anvilNetwork(anvil, { network: 'testnet', accountAbstraction: aa, indexer: { enabled: false } }),
      ],
      storage,
    })
    keyA = await h.createKey({ scopes: ['wallets:manage'] })
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('returns the factory CREATE2 address, equal to getAddress on chain and to permissionless.js', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    for (const index of [0n, 42n, 2n ** 255n + 7n]) {
      const salt = index === 0n ? undefined : index === 42n ? '42' : toHex(index)
      const { status, body } = await create(keyA, { owner: owner.address, chain: 'ethereum-devnet', salt })
      expect(status).toBe(201)
      const expected = (await onChainAddress(owner.address, index)).toLowerCase()
      const independent = await toSimpleSmartAccount({
        client,
        owner,
        index,
        factoryAddress: aa.simpleAccountFactory.v07,
        entryPoint: { address: ENTRY_POINT_V07, version: '0.7' },
      })
      expect(body.address).toBe(expected)
      expect((await independent.getAddress()).toLowerCase()).toBe(expected)
      expect(body).toEqual({
        address: expected,
        owner: owner.address.toLowerCase(),
        chain: 'ethereum-devnet',
        status: 'counterfactual',
        factory: aa.simpleAccountFactory.v07,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      })
    }
  })

  it('returns the same wallet for the same (owner, salt, chain), whatever form the salt takes', async () => {
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const first = await create(keyA, { owner, chain: 'ethereum-devnet', salt: '255' })
    const again = await create(keyA, { owner: owner.toLowerCase(), chain: 'ethereum-devnet', salt: '0xff' })
    expect(first.status).toBe(201)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    const list = await api(keyA, 'GET', '/wallets?limit=100')
    expect((list.body.wallets as Json[]).filter((w) => w.address === first.body.address)).toHaveLength(1)
  })

  it('answers 400 naming owner, salt or chain when they are bad', async () => {
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const cases: [unknown, RegExp][] = [
      [{ chain: 'ethereum-devnet' }, /owner/],
      [{ owner: '0x1234', chain: 'ethereum-devnet' }, /owner/],
      [{ owner }, /chain/],
      [{ owner: ZERO, chain: 'ethereum-devnet' }, /^owner must not be the zero address/],
      [{ owner: badChecksum(owner), chain: 'ethereum-devnet' }, /^owner has a wrong EIP-55 checksum/],
      [{ owner, chain: 'ethereum-devnet', salt: 'abc' }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: '-1' }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: (2n ** 256n).toString() }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: true }, /salt/],
      [[owner], /JSON object/],
    ]
    for (const [body, message] of cases) {
      const res = await create(keyA, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.error).toMatchObject({
        code: 'invalid_request',
        status: 400,
        message: expect.stringMatching(message),
      })
    }
    const noBody = await fetch(`${h.baseUrl}/wallets/create`, {
      method: 'POST',
      headers: { 'x-api-key': keyA },
    })
    expect(noBody.status).toBe(400)
    expect(((await noBody.json()) as { error: Json }).error.message).toMatch(/owner/)
    const malformed = await fetch(`${h.baseUrl}/wallets/create`, {
      method: 'POST',
      headers: { 'x-api-key': keyA, 'content-type': 'application/json' },
      body: '{"owner":',
    })
    expect(malformed.status).toBe(400)
    const noScope = await h.createKey({ scopes: ['rpc:read'] })
    expect((await create(noScope, { owner, chain: 'ethereum-devnet' })).status).toBe(403)
    expect((await api(keyA, 'GET', '/wallets/0xnothex')).status).toBe(400)
    expect((await api(keyA, 'GET', '/wallets?limit=101')).status).toBe(400)
    // An unknown chain is a 404 naming the parameter, as on every other route.
    const nowhere = await create(keyA, { owner, chain: 'nowhere-chain' })
    expect(nowhere.status).toBe(404)
    expect(nowhere.body.error).toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/^chain: /),
    })
    expect((await api(keyA, 'GET', '/wallets?chain=nowhere')).status).toBe(404)
    expect((await api(keyA, 'GET', `/wallets/${owner.toLowerCase()}?chain=nowhere`)).status).toBe(404)
    expect((await api(keyA, 'GET', `/wallets/${badChecksum(owner)}`)).body.error).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^address has a wrong EIP-55 checksum/),
    })
  })

  it('lists wallets per calling key, with pagination and the chain filter', async () => {
    const kA = await h.createKey({ scopes: ['wallets:manage'] })
    const kB = await h.createKey({ scopes: ['wallets:manage'] })
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const made: string[] = []
    for (let i = 0; i < 5; i++) {
      const chain = i < 3 ? 'ethereum-devnet' : 'ethereum-testnet'
      made.push((await create(kA, { owner, chain, salt: String(i) })).body.address as string)
    }
    const all = await api(kA, 'GET', '/wallets')
    expect(all.body).toMatchObject({ page: 1, total: 5 })
    expect((all.body.wallets as Json[]).map((w) => w.address)).toEqual(made)
    expect(Object.keys((all.body.wallets as Json[])[0] as Json).sort()).toEqual(
      ['address', 'chain', 'created_at', 'owner', 'status'].sort(),
    )
    const p2 = await api(kA, 'GET', '/wallets?limit=2&page=2')
    expect(p2.body).toMatchObject({ page: 2, total: 5 })
    expect((p2.body.wallets as Json[]).map((w) => w.address)).toEqual(made.slice(2, 4))
    const past = await api(kA, 'GET', '/wallets?limit=2&page=9')
    expect(past.body).toEqual({ wallets: [], page: 9, total: 5 })
    const testnet = await api(kA, 'GET', '/wallets?chain=ethereum-testnet')
    expect(testnet.body.total).toBe(2)
    expect((testnet.body.wallets as Json[]).every((w) => w.chain === 'ethereum-testnet')).toBe(true)

    // Another key sees none of them, and cannot read them one by one either.
    expect((await api(kB, 'GET', '/wallets')).body).toEqual({ wallets: [], page: 1, total: 0 })
    expect((await api(kB, 'GET', `/wallets/${made[0]}`)).status).toBe(404)
    // Asking for the same wallet links it to that key too; the first key's list is unchanged.
    const shared = await create(kB, { owner, chain: 'ethereum-devnet', salt: '0' })
    expect(shared.status).toBe(201)
    expect(shared.body.address).toBe(made[0])
    expect((await api(kB, 'GET', '/wallets')).body.total).toBe(1)
    expect((await api(kA, 'GET', '/wallets')).body.total).toBe(5)
    // The same address on two networks: `chain` picks one.
    const onTestnet = await create(kA, { owner, chain: 'ethereum-testnet', salt: '0' })
    expect(onTestnet.body.address).toBe(made[0])
    expect((await api(kA, 'GET', `/wallets/${made[0]}?chain=ethereum-testnet`)).body.chain).toBe(
      'ethereum-testnet',
    )
    expect((await api(kA, 'GET', `/wallets/${made[0]}`)).body.chain).toBe('ethereum-devnet')
  })

  it('a UserOperation with initCode sent straight to EntryPoint.handleOps deploys the wallet', async () => {
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
