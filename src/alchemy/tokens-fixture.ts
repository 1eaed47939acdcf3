import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Alchemy, Network } from 'alchemy-sdk'
import { afterAll, beforeAll, expect } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'

/**
 * Test-only: the shared setup of the alchemy-sdk token tests (tokens.sdk.test.ts and
 * core.sdk.test.ts): anvil with Multicall3 and real ERC-20 contracts, a token list naming two of
 * them, and a Halyard that has indexed the mints, with the real alchemy-sdk pointed at its
 * compat root.
 */

export const HOLDER = '0x000000000000000000000000000000000000a11c' as Address
export const OTHER = '0x000000000000000000000000000000000000b0b0' as Address
export const LOGO = 'https://tokens.example/dusd.png'
export const hex32 = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`

/**
 * What one describe block shares. The resources are set by its beforeAll, so read them inside a
 * test, never at collection time; the helpers may be destructured anywhere.
 */
export interface TokensFixture {
  anvil: AnvilProcess
  storage: Storage
  h: TestHalyard
  dev: Devnet
  key: string
  /** The compat root's JSON-RPC URL, key in the path. */
  url: string
  alchemy: Alchemy
  /** Listed, with a logo. */
  usd: Address
  /** Listed, no logo. */
  gold: Address
  /** Minted to the dev account, then all of it transferred to HOLDER. */
  gone: Address
  /** Not on the list; only OTHER holds it. */
  unlisted: Address
  /** The block of the last mint/transfer to HOLDER. */
  mintBlock: bigint
  rpc(method: string, params: unknown[]): ReturnType<typeof postRpc>
  /** The JSON-RPC error of a single call (which must answer HTTP 200). */
  errorOf(method: string, params: unknown[]): Promise<{ code: number; message: string }>
}

/** Registers the beforeAll/afterAll of the enclosing describe block. */
export function tokensFixture(): TokensFixture {
  // The resources are filled in by beforeAll below, before any test runs.
  const fx = {} as TokensFixture
  fx.rpc = (method, params) => postRpc(fx.url, undefined, call(method, params))
  fx.errorOf = async (method, params) => {
    const res = await fx.rpc(method, params)
    expect(res.status).toBe(200)
    return res.json.error as { code: number; message: string }
  }

  beforeAll(async () => {
    fx.anvil = await startAnvil()
    await ensureMulticall3(fx.anvil.url)
    fx.storage = await openStorage({})
    fx.dev = new Devnet(fx.anvil.url)
    fx.usd = await fx.dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    fx.gold = await fx.dev.deploy('DemoERC20', ['Gold', 'DGLD', 18])
    fx.gone = await fx.dev.deploy('DemoERC20', ['Gone', 'GONE', 18])
    fx.unlisted = await fx.dev.deploy('DemoERC20', ['Quiet', 'QT', 0])
    const dir = mkdtempSync(path.join(tmpdir(), 'alc-tokens-'))
    const list = path.join(dir, 'list.json')
    const entry = (address: Address, name: string, symbol: string, decimals: number, logoURI?: string) => ({
      chainId: fx.anvil.chainId,
      address,
      name,
      symbol,
      decimals,
      ...(logoURI ? { logoURI } : {}),
    })
    writeFileSync(
      list,
      JSON.stringify({
        name: 'test list',
        timestamp: '2026-11-24T00:00:00Z',
        version: { major: 1, minor: 0, patch: 0 },
        tokens: [entry(fx.usd, 'Dollar', 'DUSD', 6, LOGO), entry(fx.gold, 'Gold', 'DGLD', 18)],
      }),
    )
    fx.h = await startTestHalyard({
      networks: [anvilNetwork(fx.anvil, { data: { tokenLists: [list] } })],
      storage: fx.storage,
    })
    fx.key = await fx.h.createKey()
    fx.url = `${fx.h.baseUrl}/alchemy/eth-devnet/v2/${fx.key}`
    // `network` only sets what ethers believes the chain is; a custom url is used as is.
    fx.alchemy = new Alchemy({ url: fx.url, network: Network.ETH_MAINNET, maxRetries: 0 })
    await fx.dev.send('DemoERC20', fx.usd, 'mint', [HOLDER, 1_234_567_891n])
    await fx.dev.send('DemoERC20', fx.gold, 'mint', [HOLDER, 10n ** 18n + 1n])
    await fx.dev.send('DemoERC20', fx.gone, 'mint', [DEV_ACCOUNT, 7n])
    await fx.dev.send('DemoERC20', fx.gone, 'transfer', [HOLDER, 7n])
    fx.mintBlock = BigInt(await fx.dev.rpc<string>('eth_blockNumber'))
    await fx.dev.send('DemoERC20', fx.unlisted, 'mint', [OTHER, 3n])
    const head = BigInt(await fx.dev.rpc<string>('eth_blockNumber'))
    await fx.h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
  })
  afterAll(async () => {
    await fx.h?.close()
    await fx.storage?.close()
    await fx.anvil?.stop()
  })

  return fx
}
