import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createPublicClient, createWalletClient, http, type PublicClient } from 'viem'
import { afterAll, beforeAll } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import type { StorageBackend } from '../../test/helpers/storage.ts'
import { simpleAccountFactoryAbi } from '../aa/contracts.ts'
import { type DevAccountAbstraction, ensureAccountAbstraction } from '../devnet/account-abstraction.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'

/**
 * Test-only: the shared setup of the smart-wallet tests (wallets.test.ts and
 * wallet-deployments.test.ts): anvil with the ERC-4337 contracts, a Halyard indexing it as
 * `devnet` and serving it unindexed as `testnet`, and a key with `wallets:manage`.
 */

export type Json = Record<string, unknown>

const devClient = (url: string) => createWalletClient({ transport: http(url), account: DEV_ACCOUNT })

/**
 * What one describe block shares. The resources are set by its beforeAll, so read them inside a
 * test, never at collection time; the helpers may be destructured anywhere.
 */
export interface WalletsFixture {
  anvil: AnvilProcess
  storage: Storage
  h: TestHalyard
  aa: DevAccountAbstraction
  client: PublicClient
  /** Holds `wallets:manage`. */
  keyA: string
  /** A wallet client for the funded dev account. */
  dev(): ReturnType<typeof devClient>
  api(key: string, method: 'GET' | 'POST', p: string, body?: unknown): Promise<{ status: number; body: Json }>
  create(key: string, body: unknown): Promise<{ status: number; body: Json }>
  /** Resolves once the indexer has reached the node's head. */
  synced(): Promise<void>
  /** The factory's own answer for the wallet of (owner, salt). */
  onChainAddress(owner: Address, salt: bigint): Promise<Address>
}

/** Registers the beforeAll/afterAll of the enclosing describe block. */
export function walletsFixture(backend: StorageBackend): WalletsFixture {
  // The resources are filled in by beforeAll below, before any test runs.
  const fx = {} as WalletsFixture
  fx.dev = () => devClient(fx.anvil.url)
  fx.api = async (key, method, p, body) => {
    const res = await fetch(`${fx.h.baseUrl}${p}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Json }
  }
  fx.create = (key, body) => fx.api(key, 'POST', '/wallets/create', body)
  fx.synced = async () => {
    // Straight from the node: viem's getBlockNumber answers from a cache for a few seconds.
    const head = BigInt((await rpc(fx.anvil.url, 'eth_blockNumber', [])) as string)
    await fx.h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
  }
  fx.onChainAddress = (owner, salt) =>
    fx.client.readContract({
      address: fx.aa.simpleAccountFactory.v07,
      abi: simpleAccountFactoryAbi,
      functionName: 'getAddress',
      args: [owner, salt],
    })

  beforeAll(async () => {
    fx.anvil = await startAnvil()
    fx.client = createPublicClient({ transport: http(fx.anvil.url) })
    fx.aa = (
      await ensureAccountAbstraction(fx.anvil.url, mkdtempSync(path.join(tmpdir(), 'halyard-aa-')))
    ).config
    fx.storage = await backend.open()
    fx.h = await startTestHalyard({
      networks: [
        anvilNetwork(fx.anvil, { accountAbstraction: fx.aa }),
        // The same node under a second name, to show the `chain` filter (not indexed).
        anvilNetwork(fx.anvil, {
          network: 'testnet',
          accountAbstraction: fx.aa,
          indexer: { enabled: false },
        }),
      ],
      storage: fx.storage,
    })
    fx.keyA = await fx.h.createKey({ scopes: ['wallets:manage'] })
  })
  afterAll(async () => {
    await fx.h?.close()
    await fx.storage?.close()
    await fx.anvil?.stop()
  })

  return fx
}
