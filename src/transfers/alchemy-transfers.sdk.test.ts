import { Alchemy, AssetTransfersCategory, Network, SortingOrder } from 'alchemy-sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'

const HOLDER = '0x00000000000000000000000000000000000a11ce' as Address
/**
 * Forwards the value it receives to the address in its calldata (CALL with all gas), hand-
 * assembled as in src/indexer/indexer.native.test.ts: the internal transfer.
 */
const FORWARDER_INIT = '0x601080600b6000396000f36000600060006000346000355af15000'
const ALL = [
  AssetTransfersCategory.EXTERNAL,
  AssetTransfersCategory.INTERNAL,
  AssetTransfersCategory.ERC20,
  AssetTransfersCategory.ERC721,
  AssetTransfersCategory.ERC1155,
]
const hex32 = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`

/**
 * The real alchemy-sdk (only `url` changed) calling `alchemy.core.getAssetTransfers` on the
 * compatibility root, against transfers anvil mined and Halyard's indexer wrote: external,
 * internal (through a forwarding contract), ERC-20, ERC-721 and an ERC-1155 batch.
 */
describe('alchemy-sdk getAssetTransfers against the compat root', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let dev: Devnet
  let alchemy: Alchemy
  let usd: Address
  let nft: Address
  let items: Address
  let forwarder: Address
  const hashes: Record<string, Hash> = {}

  const sendTx = async (tx: Record<string, unknown>) => {
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, ...tx }])
    const r = await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    return { hash, address: r.contractAddress?.toLowerCase() as Address | undefined }
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    storage = await openTestPGlite()
    dev = new Devnet(anvil.url)
    usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    nft = await dev.deploy('DemoERC721', ['Sailors', 'SAIL'])
    items = await dev.deploy('DemoERC1155', ['data:,{}', 'Items', 'ITEM'])
    forwarder = (await sendTx({ data: FORWARDER_INIT })).address as Address
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    const key = await h.createKey()
    alchemy = new Alchemy({
      url: `${h.baseUrl}/alchemy/ethereum-devnet/v2/${key}`,
      network: Network.ETH_MAINNET,
      maxRetries: 0,
    })
    hashes.mint = await dev.send('DemoERC20', usd, 'mint', [HOLDER, 2_500_000n])
    hashes.nft = await dev.send('DemoERC721', nft, 'mint', [HOLDER, 7n, 'data:,{}'])
    hashes.batch = await dev.send('DemoERC1155', items, 'mintBatch', [HOLDER, [1n, 2n], [10n, 3n]])
    hashes.eth = (await sendTx({ to: HOLDER, value: '0xde0b6b3a7640000' })).hash
    hashes.internal = (
      await sendTx({ to: forwarder, value: '0x4d2', data: `0x${HOLDER.slice(2).padStart(64, '0')}` })
    ).hash
    for (let i = 0; i < 6; i++) await dev.send('DemoERC20', usd, 'mint', [HOLDER, BigInt(i + 1) * 1_000_000n])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head, 90_000)
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('answers every category in the shapes the SDK types declare', async () => {
    const { transfers, pageKey } = await alchemy.core.getAssetTransfers({
      toAddress: HOLDER,
      category: ALL,
      withMetadata: true,
    })
    expect(pageKey).toBeUndefined()
    const of = (hash: Hash | undefined) => transfers.find((t) => t.hash === hash)
    expect(of(hashes.eth)).toMatchObject({
      category: 'external',
      from: DEV_ACCOUNT,
      to: HOLDER,
      value: 1,
      asset: 'ETH',
      uniqueId: `${hashes.eth}:external`,
      rawContract: { value: '0xde0b6b3a7640000', address: null, decimal: '0x12' },
    })
    expect(of(hashes.internal)).toMatchObject({
      category: 'internal',
      from: forwarder,
      to: HOLDER,
      value: 1.234e-15,
      asset: 'ETH',
      rawContract: { value: '0x4d2', address: null, decimal: '0x12' },
    })
    expect(of(hashes.mint)).toMatchObject({
      category: 'erc20',
      value: 2.5,
      asset: 'DUSD',
      rawContract: { value: '0x2625a0', address: usd, decimal: '0x6' },
    })
    expect(of(hashes.nft)).toMatchObject({
      category: 'erc721',
      value: null,
      erc721TokenId: hex32(7n),
      tokenId: hex32(7n),
      asset: 'SAIL',
      rawContract: { address: nft },
    })
    expect(of(hashes.batch)).toMatchObject({
      category: 'erc1155',
      erc1155Metadata: [
        { tokenId: hex32(1n), value: '0xa' },
        { tokenId: hex32(2n), value: '0x3' },
      ],
      rawContract: { address: items },
    })
    for (const t of transfers) {
      expect(t.blockNum).toMatch(/^0x[0-9a-f]+$/)
      expect(Number.isNaN(Date.parse(t.metadata.blockTimestamp))).toBe(false)
    }
    const blocks = transfers.map((t) => Number(t.blockNum))
    expect(blocks).toEqual([...blocks].sort((a, b) => a - b)) // Alchemy's default order: ascending
  })

  for (const order of [SortingOrder.ASCENDING, SortingOrder.DESCENDING]) {
    it(`walks maxCount 2 + pageKey to the end without duplicates (${order})`, async () => {
      const whole = await alchemy.core.getAssetTransfers({ toAddress: HOLDER, category: ALL, order })
      expect(whole.transfers.length).toBeGreaterThan(8)
      const seen: string[] = []
      let pageKey: string | undefined
      for (let i = 0; i < 50; i++) {
        const page = await alchemy.core.getAssetTransfers({
          toAddress: HOLDER,
          category: ALL,
          order,
          maxCount: 2,
          pageKey,
        })
        expect(page.transfers.length).toBeLessThanOrEqual(2)
        seen.push(...page.transfers.map((t) => t.uniqueId))
        pageKey = page.pageKey
        if (!pageKey) break
      }
      expect(pageKey).toBeUndefined()
      expect(new Set(seen).size).toBe(seen.length)
      expect(seen).toEqual(whole.transfers.map((t) => t.uniqueId))
    })
  }

  it('filters by contract and block range, and refuses malformed params naming the field', async () => {
    const mintBlock = (await dev.client.getTransactionReceipt({ hash: hashes.mint as Hash })).blockNumber
    const { transfers } = await alchemy.core.getAssetTransfers({
      fromBlock: `0x${mintBlock.toString(16)}`,
      toBlock: `0x${mintBlock.toString(16)}`,
      toAddress: HOLDER,
      contractAddresses: [usd],
      category: [AssetTransfersCategory.ERC20],
    })
    expect(transfers.map((t) => t.hash)).toEqual([hashes.mint])
    await expect(alchemy.core.getAssetTransfers({ toAddress: HOLDER, category: [] })).rejects.toThrow(
      /category/,
    )
    await expect(
      alchemy.core.getAssetTransfers({ toAddress: HOLDER, category: ALL, pageKey: 'garbage' }),
    ).rejects.toThrow(/pageKey/)
    await expect(
      alchemy.core.getAssetTransfers({ toAddress: HOLDER, category: ALL, maxCount: 5000 }),
    ).rejects.toThrow(/maxCount/)
  })
})
