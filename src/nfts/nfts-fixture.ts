import { afterAll, beforeAll } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import type { StorageBackend } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'
import type { NftMetadata } from './service.ts'
import { type MetadataServer, startMetadataServer } from './testdata/metadata-server.ts'

/**
 * Test-only: the shared setup of the NFT API tests (nfts.test.ts): a metadata server, anvil
 * with Multicall3, a dev-mode Halyard (its indexer on) and a production-mode Halyard over the
 * same database (indexer off: one indexer per database).
 */

export const ALICE = '0x00000000000000000000000000000000000a11ce' as Address
export const BOB = '0x0000000000000000000000000000000000000b0b' as Address
export const CID = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'

export const dataJson = (o: unknown) =>
  `data:application/json;base64,${Buffer.from(JSON.stringify(o)).toString('base64')}`

export interface ApiAnswer<T> {
  status: number
  headers: Headers
  body: T & { error?: { message: string } }
}

/**
 * What one describe block of the NFT tests shares. The resources are set by its beforeAll, so
 * read them inside a test, never at collection time; the helpers may be destructured anywhere.
 */
export interface NftsFixture {
  anvil: AnvilProcess
  storage: Storage
  /** Dev mode: the metadata server on 127.0.0.1 is reachable (explicit loopback allowance). */
  h: TestHalyard
  /** Production mode over the same database, its indexer off. */
  prod: TestHalyard
  dev: Devnet
  key: string
  server: MetadataServer
  /** The metadata server's base URL. */
  meta: string
  /** The paths the metadata server has served so far. */
  served(): string[]
  docs: { set(path: string, doc: unknown): void }
  get<T = Record<string, unknown>>(path: string, via?: TestHalyard): Promise<ApiAnswer<T>>
  nftMeta(c: Address, id: bigint | string, q?: string, via?: TestHalyard): Promise<ApiAnswer<NftMetadata>>
  /** Waits until the (dev-mode) indexer has the chain's head. */
  synced(): Promise<void>
}

/** Registers the beforeAll/afterAll of the enclosing describe block on `backend`. */
export function nftsFixture(backend: StorageBackend): NftsFixture {
  // The resources are filled in by beforeAll below, before any test runs.
  const fx = {} as NftsFixture
  fx.served = () => fx.server.served
  fx.docs = {
    set: (path: string, doc: unknown) => {
      fx.server.docs.set(path, doc)
    },
  }
  fx.get = async <T = Record<string, unknown>>(path: string, via: TestHalyard = fx.h) => {
    const res = await fetch(`${via.baseUrl}${path}`, { headers: { 'x-api-key': fx.key } })
    return {
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as T & { error?: { message: string } },
    }
  }
  fx.nftMeta = (c, id, q = '', via) =>
    fx.get<NftMetadata>(`/nfts/ethereum-devnet/metadata/${c}/${id}${q}`, via)
  fx.synced = async () =>
    fx.h.halyard.services.indexer.waitForBlock(
      'ethereum-devnet',
      BigInt(await fx.dev.rpc<string>('eth_blockNumber')),
    )

  beforeAll(async () => {
    fx.server = await startMetadataServer()
    fx.meta = fx.server.url
    fx.anvil = await startAnvil()
    await ensureMulticall3(fx.anvil.url)
    fx.storage = await backend.open()
    fx.dev = new Devnet(fx.anvil.url)
    const data = {
      ipfsGateway: `${fx.meta}/ipfs/`,
      arweaveGateway: `${fx.meta}/ar/`,
      nftMetadata: { timeoutMs: 700, ownedWaitMs: 5000, concurrency: 2 },
    }
    // Dev mode: the metadata server on 127.0.0.1 is reachable (explicit loopback allowance).
    fx.h = await startTestHalyard({
      networks: [anvilNetwork(fx.anvil, { data })],
      storage: fx.storage,
      devMode: true,
    })
    // Production mode over the same database (its indexer off: one indexer per database).
    fx.prod = await startTestHalyard({
      networks: [anvilNetwork(fx.anvil, { data, indexer: { enabled: false, maxBlockRange: 2000 } })],
      storage: fx.storage,
    })
    fx.key = await fx.h.createKey()
  })
  afterAll(async () => {
    await fx.prod?.close()
    await fx.h?.close()
    await fx.storage?.close()
    await fx.anvil?.stop()
    await fx.server?.close()
  })

  return fx
}
