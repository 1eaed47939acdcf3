import { pad } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deployCode, hostileContractInitcode } from '../../test/helpers/evm-code.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { ensureMulticall3, MULTICALL3_ADDRESS } from '../devnet/multicall3.ts'
import type { NftCollection, NftMetadata } from '../nfts/service.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { MultiReader } from './multicall.ts'
import type { TokenBalanceList, TokenMetadata } from './service.ts'

const HOLDER = '0x000000000000000000000000000000000000a11d' as Address
const LATE = '0x000000000000000000000000000000000000a11e' as Address

/** Not storage-specific: the reads go to the node, so one backend is enough. */
describe('token and NFT reads when Multicall3 disappears', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let coin: Address
  let nft: Address

  const get = async <T>(path: string) => {
    const res = await fetch(`${h.baseUrl}${path}`, { headers: { 'x-api-key': key } })
    return { status: res.status, body: (await res.json()) as T & { error?: { message: string } } }
  }
  const synced = async () =>
    h.halyard.services.indexer.waitForBlock(
      'ethereum-devnet',
      BigInt(await dev.rpc<string>('eth_blockNumber')),
    )

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    storage = await storageBackends()[0]!.open()
    dev = new Devnet(anvil.url)
    coin = await dev.deploy('DemoERC20', ['Coin', 'CN', 6])
    nft = await dev.deploy('DemoERC721', ['Boats', 'BOAT'])
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    key = await h.createKey()
    await dev.send('DemoERC20', coin, 'mint', [HOLDER, 5_000_000n])
    await dev.send('DemoERC721', nft, 'mint', [HOLDER, 1n, 'data:application/json,{"name":"Boat%201"}'])
    await synced()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  async function deployRaw(initcode: Hex): Promise<Address> {
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, data: initcode }])
    const receipt = await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect(receipt.status).toBe('success')
    return receipt.contractAddress as Address
  }

  // Runs before Multicall3 is removed below.
  it('keeps using Multicall3 after a batch whose calls burnt its gas', async () => {
    // Answers with its caller: Multicall3's address through aggregate3, zero when called directly.
    const echo = await deployRaw(deployCode('0x3360005260206000f3'))
    const burner = await deployRaw(hostileContractInitcode({}, 'burn'))
    const reader = new MultiReader(h.halyard.ctx.networks.get('ethereum', 'devnet'))
    const name = '0x06fdde03' as Hex
    // Eight gas burners exhaust the whole aggregate3: that batch is answered call by call.
    const burnt = await reader.read(Array.from({ length: 8 }, () => ({ target: burner, data: name })))
    expect(burnt).toEqual(Array.from({ length: 8 }, () => ({ success: false, data: '0x' })))
    const [echoed] = await reader.read([{ target: echo, data: name }])
    expect(echoed).toEqual({ success: true, data: pad(MULTICALL3_ADDRESS) })
  })

  it('answers balances, token metadata, NFT metadata and collections with individual calls', async () => {
    // First through Multicall3, so the reader has found it there.
    const before = await get<TokenBalanceList>(`/tokens/ethereum-devnet/balances/${HOLDER}`)
    expect(before.status).toBe(200)
    expect(before.body.tokens[1]).toMatchObject({ contract: coin, balance: '5000000' })

    await dev.rpc('anvil_setCode', [MULTICALL3_ADDRESS, '0x'])
    // Unseen since: nothing cached can answer for them.
    await dev.send('DemoERC20', coin, 'mint', [LATE, 7n])
    await dev.send('DemoERC721', nft, 'mint', [LATE, 2n, 'data:application/json,{"name":"Boat%202"}'])
    await synced()

    const balances = await get<TokenBalanceList>(`/tokens/ethereum-devnet/balances/${LATE}`)
    expect(balances.status, JSON.stringify(balances.body)).toBe(200)
    expect(balances.body.tokens.slice(1)).toEqual([
      expect.objectContaining({ contract: coin, symbol: 'CN', decimals: 6, balance: '7' }),
    ])
    const meta = await get<TokenMetadata>(`/tokens/ethereum-devnet/metadata/${coin}`)
    expect(meta.status, JSON.stringify(meta.body)).toBe(200)
    expect(meta.body).toMatchObject({ name: 'Coin', symbol: 'CN', decimals: 6, total_supply: '5000007' })
    const token = await get<NftMetadata>(`/nfts/ethereum-devnet/metadata/${nft}/2`)
    expect(token.status, JSON.stringify(token.body)).toBe(200)
    expect(token.body).toMatchObject({ name: 'Boat 2', owner: LATE, standard: 'ERC721' })
    const collection = await get<NftCollection>(`/nfts/ethereum-devnet/collection/${nft}`)
    expect(collection.status, JSON.stringify(collection.body)).toBe(200)
    expect(collection.body).toMatchObject({ name: 'Boats', symbol: 'BOAT', total_supply: 2, num_owners: 2 })
  })
})
