import { createSmartAccountClient } from 'permissionless'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import { createPublicClient, defineChain, getAddress, http, parseAbi, toHex } from 'viem'
import { createPaymasterClient, entryPoint07Abi } from 'viem/account-abstraction'
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
import type { AccountAbstractionDeployment } from '../devnet/account-abstraction.ts'
import { createLogger } from '../logger.ts'
import type { Address } from '../types.ts'
import { bundlerRegistry } from './rpc.ts'
import type { EntryPointVersion } from './types.ts'

/**
 * The bundler on a running Halyard in dev mode (safe mode: ERC-7562 rules on anvil), used by
 * permissionless.js unchanged except for the URL and the key header, as docs/bundler.md shows it.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

const balanceOfAbi = parseAbi(['function balanceOf(address) view returns (uint256)'])

describe('bundler over HTTP', () => {
  let fx: SponsorFixture
  let h: TestHalyard
  let dep: AccountAbstractionDeployment
  let key: string
  let operatorKey: string
  let adminToken: string
  let url: string

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    ;({ h, dep, key, operatorKey, adminToken } = await startDevHalyard(fx, 'bundler-http'))
    url = `${h.baseUrl}/bundler/ethereum/devnet`
  }, 120_000)

  afterAll(async () => {
    await h?.close()
    await fx?.close()
  })

  const chainOf = () =>
    defineChain({
      id: fx.anvil.chainId,
      name: 'devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [fx.anvil.url] } },
    })

  async function smartAccount(version: EntryPointVersion) {
    const chain = chainOf()
    const publicClient = createPublicClient({ chain, transport: http(fx.anvil.url) })
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toSimpleSmartAccount({
      client: publicClient,
      owner,
      factoryAddress: fx.aa.simpleAccountFactory[version],
      entryPoint: { address: fx.aa.entryPoints[version], version: version === 'v06' ? '0.6' : '0.7' },
    })
    const address = (await account.getAddress()).toLowerCase() as Address
    return { chain, publicClient, account, address, owner: owner.address.toLowerCase() as Address }
  }

  const wallet = async (address: Address) => {
    const r = await fetch(`${h.baseUrl}/wallets/${address}?chain=${NETWORK}`, {
      headers: { 'x-api-key': key },
    })
    expect(r.status).toBe(200)
    return (await r.json()) as Record<string, unknown>
  }

  const mint = (to: Address, amount: bigint) => ({
    to: fx.token,
    data: mintData(to, amount),
  })
  const headers = () => ({ fetchOptions: { headers: { 'x-api-key': key } } })

  it.each<EntryPointVersion>(['v07', 'v06'])(
    '%s: permissionless deploys a counterfactual account with its first op, then sends a second',
    async (version) => {
      const { chain, publicClient, account, address, owner } = await smartAccount(version)
      // /v1/wallets creates v0.7 SimpleAccounts (its factory): the same address permissionless computes.
      if (version === 'v07') {
        const created = await fetch(`${h.baseUrl}/wallets/create`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ owner, chain: NETWORK }),
        })
        expect(created.status).toBe(201)
        expect(await created.json()).toMatchObject({ address, status: 'counterfactual' })
      }
      await fx.fund(address)
      const client = createSmartAccountClient({
        account,
        chain,
        client: publicClient,
        bundlerTransport: http(url, headers()),
      })
      const bundleTxs: string[] = []
      for (const amount of [5n, 7n]) {
        const hash = await client.sendUserOperation({ calls: [mint(address, amount)] })
        const receipt = await client.waitForUserOperationReceipt({ hash, pollingInterval: 100 })
        expect(receipt.success).toBe(true)
        expect(receipt.sender.toLowerCase()).toBe(address)
        bundleTxs.push(receipt.receipt.transactionHash)
        if (version === 'v07')
          // Deployed by the first op's bundle; nonce counts the account's executed operations.
          expect(await wallet(address)).toMatchObject({
            status: 'deployed',
            deploy_tx: bundleTxs[0],
            nonce: bundleTxs.length,
          })
      }
      expect(await fx.client.getCode({ address })).not.toBe(undefined)
      const tokens = await fx.client.readContract({
        address: fx.token,
        abi: balanceOfAbi,
        functionName: 'balanceOf',
        args: [address],
      })
      expect(tokens).toBe(12n)
    },
    120_000,
  )

  it('sponsors a zero-ETH account through the ERC-7677 endpoint and a policy made over HTTP', async () => {
    const created = await fetch(`${h.baseUrl}/gas/policies`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bundler', chain: NETWORK, rules: { allowed_contracts: [fx.token] } }),
    })
    expect(created.status).toBe(201)
    const policyId = ((await created.json()) as { id: string }).id
    const { chain, publicClient, account, address } = await smartAccount('v07')
    const client = createSmartAccountClient({
      account,
      chain,
      client: publicClient,
      bundlerTransport: http(url, headers()),
      paymaster: createPaymasterClient({
        transport: http(`${h.baseUrl}/paymaster/ethereum/devnet`, headers()),
      }),
      paymasterContext: { policy_id: policyId },
    })
    const deposit = () =>
      fx.client.readContract({
        address: fx.aa.entryPoints.v07,
        abi: entryPoint07Abi,
        functionName: 'balanceOf',
        args: [dep.config.paymaster as Address],
      })
    const before = await deposit()
    const hash = await client.sendUserOperation({ calls: [mint(address, 1n)] })
    const receipt = await client.waitForUserOperationReceipt({ hash, pollingInterval: 100 })
    expect(receipt.success).toBe(true)
    expect(receipt.paymaster?.toLowerCase()).toBe(dep.config.paymaster)
    expect(await fx.client.getBalance({ address })).toBe(0n)
    // The paymaster paid exactly the op's actual cost, and the policy books that cost once the
    // server's settlement poller has seen the UserOperationEvent.
    expect(before - (await deposit())).toBe(receipt.actualGasCost)
    const spend = await until('the sponsorship to settle', async () => {
      const r = await fetch(`${h.baseUrl}/gas/policies/${policyId}`, { headers: { 'x-api-key': key } })
      const s = ((await r.json()) as { spend: { settled_operations: number } }).spend
      return s.settled_operations === 1 ? s : null
    })
    expect(spend).toMatchObject({
      operations: 1,
      settled_wei: receipt.actualGasCost.toString(),
      reserved_wei: '0',
    })
  }, 120_000)

  it('answers eth_chainId and eth_supportedEntryPoints; refuses /rpc methods and unknown ones with -32601', async () => {
    const chainId = await postRpc(url, key, call('eth_chainId'))
    expect(chainId.json).toMatchObject({ result: toHex(fx.anvil.chainId) })
    const eps = await postRpc(url, key, call('eth_supportedEntryPoints'))
    expect(eps.json).toMatchObject({ result: [fx.aa.entryPoints.v07, fx.aa.entryPoints.v06] })
    for (const method of ['eth_blockNumber', 'eth_sendUserOperationz', 'debug_traceCall']) {
      const r = await postRpc(url, key, call(method))
      expect(r.status).toBe(200)
      expect(r.json).toMatchObject({ error: { code: -32601 } })
      expect((r.json.error as { message: string }).message).toContain(method)
    }
  })

  it('refuses a key without bundler:send with a 403 naming the scope', async () => {
    const reader = await h.createKey({ scopes: ['rpc:read'] })
    const r = await postRpc(url, reader, call('eth_chainId'))
    expect(r.status).toBe(403)
    expect(r.json).toMatchObject({ error: { code: 'forbidden', status: 403 } })
    expect((r.json.error as { message: string }).message).toContain('bundler:send')
  })

  it('answers a bad op with -32602 naming the field, and an unknown EntryPoint listing the served ones', async () => {
    const op = { sender: '0x1234', nonce: '0x0', callData: '0x', signature: '0x' }
    const bad = await postRpc(url, key, call('eth_sendUserOperation', [op, fx.aa.entryPoints.v07]))
    expect(bad.status).toBe(200)
    expect(bad.json).toMatchObject({ error: { code: -32602 } })
    expect((bad.json.error as { message: string }).message).toContain('sender')
    const ep = await postRpc(url, key, call('eth_estimateUserOperationGas', [op, fx.token]))
    expect(ep.json).toMatchObject({ error: { code: -32602 } })
    expect((ep.json.error as { message: string }).message).toContain(fx.aa.entryPoints.v07)
    const hash = await postRpc(url, key, call('eth_getUserOperationReceipt', ['0x12']))
    expect(hash.json).toMatchObject({
      error: { code: -32602, message: expect.stringContaining('userOpHash') },
    })
    const none = await postRpc(url, key, call('eth_getUserOperationByHash', [`0x${'ab'.repeat(32)}`]))
    expect(none.json).toMatchObject({ result: null })
  })

  it('answers garbage params to every method with a JSON-RPC error, never a 500', async () => {
    const garbage: unknown[][] = [
      [],
      [null, null, null],
      [{ sender: 1 }, 'x', { a: 1 }],
      [{}, fx.aa.entryPoints.v07, []],
      [{ sender: fx.token, nonce: '0x', callData: 5 }, fx.aa.entryPoints.v06],
      ['0x'.padEnd(100_000, 'f'), { __proto__: 1 }],
    ]
    const methods = [
      'eth_sendUserOperation',
      'eth_estimateUserOperationGas',
      'eth_getUserOperationByHash',
      'eth_getUserOperationReceipt',
      'debug_bundler_dumpMempool',
      'debug_bundler_setReputation',
      'debug_bundler_getStakeStatus',
    ]
    const batch = methods.flatMap((method, i) =>
      garbage.map((params, j) => call(method, params, i * 100 + j)),
    )
    // The operator's key: debug_bundler_* are operator controls.
    const r = await postRpc(url, operatorKey, batch)
    expect(r.status).toBe(200)
    const answers = r.json as unknown as { id: number; error?: { code: number; message: string } }[]
    expect(answers).toHaveLength(batch.length)
    for (const a of answers) {
      expect(a.error?.code, JSON.stringify(a)).toBe(-32602)
      expect(a.error?.message.length).toBeGreaterThan(5)
    }
  })

  it('serves debug_bundler_* in dev mode to the operator only: a key of its account or the admin token', async () => {
    const dump = call('debug_bundler_dumpMempool', [fx.aa.entryPoints.v07])
    const r = await postRpc(url, operatorKey, dump)
    expect(r.json).toMatchObject({ result: [] })
    // Values the reference bundler's clients expect: "ok" with nothing to bundle, decimal stakes.
    const now = await postRpc(url, operatorKey, call('debug_bundler_sendBundleNow', []))
    expect(now.json).toMatchObject({ result: 'ok' })
    const nobody = '0x00000000000000000000000000000000000000cc'
    const stake = await postRpc(
      url,
      operatorKey,
      call('debug_bundler_getStakeStatus', [nobody, fx.aa.entryPoints.v07]),
    )
    expect(stake.json).toMatchObject({
      result: { stakeInfo: { addr: getAddress(nobody), stake: '0', unstakeDelaySec: '0' } },
    })
    const mode = await postRpc(url, operatorKey, call('debug_bundler_setBundlingMode', ['sometimes']))
    expect(mode.json).toMatchObject({ error: { code: -32602, message: expect.stringContaining('mode') } })

    // A tenant's key with every scope (bundler:send too): 403 naming the rule, nothing done.
    const mempoolBefore = await postRpc(url, operatorKey, dump)
    for (const method of [
      'debug_bundler_clearState',
      'debug_bundler_setBundlingMode',
      'debug_bundler_dumpMempool',
    ]) {
      const refused = await postRpc(url, key, call(method, method.endsWith('Mode') ? ['manual'] : []))
      expect(refused.status, method).toBe(403)
      expect(refused.json).toMatchObject({
        error: { code: 'forbidden', message: expect.stringContaining(method) },
      })
      expect((refused.json.error as { message: string }).message).toContain('operator control')
    }
    // In a batch, the item is refused (-32003) and the rest run.
    const batch = await postRpc(url, key, [
      call('debug_bundler_clearMempool', [], 1),
      call('eth_chainId', [], 2),
    ])
    expect(batch.json).toEqual([
      {
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32003, message: expect.stringContaining('operator control') },
      },
      { jsonrpc: '2.0', id: 2, result: expect.any(String) },
    ])
    // The same on the Alchemy-compatible root (it serves the bundler's rows too).
    const root = await postRpc(`${h.baseUrl}/alchemy/ethereum-devnet/v2/${key}`, undefined, dump)
    expect(root.status).toBe(403)
    expect((await postRpc(url, operatorKey, dump)).json).toEqual(mempoolBefore.json)

    // The tenant's key with the admin token from loopback is the operator; a wrong token is not.
    const withToken = await postRpc(url, key, dump, { 'x-halyard-admin-token': adminToken })
    expect(withToken.json).toMatchObject({ result: [] })
    const wrong = await postRpc(url, key, dump, { 'x-halyard-admin-token': `${adminToken.slice(1)}x` })
    expect(wrong.status).toBe(403)
  })

  it('refuses debug_bundler_* with -32601 where the network config does not enable them', () => {
    const service = h.halyard.services.bundler.service
    const network = h.halyard.ctx.networks.all()[0]
    if (!service || !network) throw new Error('the bundler is not running')
    const registry = bundlerRegistry(service, createLogger('silent'), {
      serves: () => true,
      debug: () => false,
    })
    expect(registry.lookup(network, 'eth_sendUserOperation').ok).toBe(true)
    const refused = registry.lookup(network, 'debug_bundler_clearState')
    expect(refused).toMatchObject({ ok: false, error: { code: -32601 } })
    expect(JSON.stringify(refused)).toContain('bundler.debugMethods')
  })

  it('reports the executor balance on /ready', async () => {
    const res = await fetch(`${h.halyard.origin}/ready`)
    const body = (await res.json()) as { checks: Record<string, string> }
    expect(body.checks[`bundler executor ${NETWORK}`]).toBe('ok')
  })
})
