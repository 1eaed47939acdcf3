import { AssetTransfersCategory } from 'alchemy-sdk'
import { encodeFunctionData, erc20Abi, parseAbi } from 'viem'
import { describe, expect, it } from 'vitest'
import { HOLDER, LOGO, OTHER, tokensFixture } from '../../test/fixtures/alchemy/tokens-fixture.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'

/**
 * The real alchemy-sdk, with only its `url` pointed at Halyard's compat root, against anvil with
 * real ERC-20 contracts indexed by Halyard: receipts, core calls, asset transfers, methods not
 * served and simulateAssetChanges. The token methods: tokens.sdk.test.ts.
 */
describe('alchemy-sdk against the compat root: receipts, core, simulation', () => {
  const fx = tokensFixture()
  const { errorOf } = fx

  it('getTransactionReceipts by number and by hash equal the node own eth_getBlockReceipts', async () => {
    const { alchemy, dev, mintBlock } = fx
    const direct = await dev.rpc<unknown[]>('eth_getBlockReceipts', [`0x${mintBlock.toString(16)}`])
    expect(direct.length).toBeGreaterThan(0)
    const byNumber = await alchemy.core.getTransactionReceipts({ blockNumber: `0x${mintBlock.toString(16)}` })
    expect(byNumber).toEqual({ receipts: direct })
    const block = await dev.rpc<{ hash: string }>('eth_getBlockByNumber', [
      `0x${mintBlock.toString(16)}`,
      false,
    ])
    const byHash = await alchemy.core.getTransactionReceipts({ blockHash: block.hash })
    expect(byHash).toEqual({ receipts: direct })
  })

  it('core methods go through unchanged', async () => {
    const { alchemy, dev, mintBlock, usd } = fx
    const head = await dev.rpc<string>('eth_blockNumber')
    expect(await alchemy.core.getBlockNumber()).toBe(Number(BigInt(head)))
    expect((await alchemy.core.getBalance(DEV_ACCOUNT)).toBigInt()).toBe(
      BigInt(await dev.rpc<string>('eth_getBalance', [DEV_ACCOUNT, 'latest'])),
    )
    const block = await alchemy.core.getBlock(Number(mintBlock))
    expect(block.number).toBe(Number(mintBlock))
    expect(await alchemy.core.getCode(usd)).toBe(await dev.rpc<string>('eth_getCode', [usd, 'latest']))
  })

  it('getAssetTransfers is wired to the transfer index (its own tests: src/transfers)', async () => {
    const { alchemy, usd, gold, gone } = fx
    const res = await alchemy.core.getAssetTransfers({
      fromBlock: '0x0',
      toAddress: HOLDER,
      category: [AssetTransfersCategory.ERC20],
    })
    expect(res.transfers.map((t) => t.rawContract.address?.toLowerCase()).sort()).toEqual(
      [usd, gold, gone].sort(),
    )
  })

  it('an alchemy_* method not served is -32601 naming it, through the SDK too', async () => {
    const { alchemy } = fx
    const err = await errorOf('alchemy_simulateExecution', [{}])
    expect(err.code).toBe(-32601)
    expect(err.message).toMatch(/alchemy_simulateExecution.*not served/)
    await expect(alchemy.core.send('alchemy_getGasOptimizedTransactionStatus', ['0x1'])).rejects.toThrow(
      /not served/,
    )
  })

  it('simulateAssetChanges: native value and ERC-20 transfers and approvals from debug_traceCall', async () => {
    const { alchemy, dev, usd, gold } = fx
    const transfer = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [OTHER, 100n] })
    const res = await alchemy.transact.simulateAssetChanges({ from: HOLDER, to: usd, data: transfer })
    expect(res.error).toBeUndefined()
    expect(res.gasUsed).toMatch(/^0x[0-9a-f]+$/)
    expect(res.changes).toEqual([
      {
        assetType: 'ERC20',
        changeType: 'TRANSFER',
        from: HOLDER,
        to: OTHER,
        rawAmount: '100',
        amount: '0.0001',
        name: 'Dollar',
        symbol: 'DUSD',
        decimals: 6,
        contractAddress: usd,
        logo: LOGO,
      },
    ])
    const approve = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [OTHER, 5n] })
    const approved = await alchemy.transact.simulateAssetChanges({ from: HOLDER, to: gold, data: approve })
    expect(approved.changes).toMatchObject([
      {
        assetType: 'ERC20',
        changeType: 'APPROVE',
        from: HOLDER,
        to: OTHER,
        rawAmount: '5',
        contractAddress: gold,
      },
    ])
    const paid = await alchemy.transact.simulateAssetChanges({
      from: DEV_ACCOUNT,
      to: OTHER,
      value: '0xde0b6b3a7640000',
    })
    expect(paid.changes).toEqual([
      {
        assetType: 'NATIVE',
        changeType: 'TRANSFER',
        from: DEV_ACCOUNT,
        to: OTHER,
        rawAmount: '1000000000000000000',
        amount: '1',
        name: 'Ether',
        symbol: 'ETH',
        decimals: 18,
      },
    ])
    // NFTs: a public mint is a Transfer from the zero address (ERC-721) and a TransferBatch (ERC-1155).
    const art = await dev.deploy('DemoERC721', ['Art', 'ART'])
    const items = await dev.deploy('DemoERC1155', ['ipfs://x/{id}', 'Items', 'ITM'])
    const zero = '0x0000000000000000000000000000000000000000'
    const mint721 = encodeFunctionData({
      abi: parseAbi(['function mint(address to, uint256 tokenId, string uri)']),
      functionName: 'mint',
      args: [OTHER, 58n, 'ipfs://a'],
    })
    const nft = await alchemy.transact.simulateAssetChanges({ from: HOLDER, to: art, data: mint721 })
    expect(nft.changes).toEqual([
      {
        assetType: 'ERC721',
        changeType: 'TRANSFER',
        from: zero,
        to: OTHER,
        name: 'Art',
        symbol: 'ART',
        decimals: 0,
        contractAddress: art,
        tokenId: '0x3a',
      },
    ])
    const mintBatch = encodeFunctionData({
      abi: parseAbi(['function mintBatch(address to, uint256[] ids, uint256[] amounts)']),
      functionName: 'mintBatch',
      args: [OTHER, [1n, 2n], [3n, 4n]],
    })
    const batch = await alchemy.transact.simulateAssetChanges({ from: HOLDER, to: items, data: mintBatch })
    expect(batch.changes).toMatchObject([
      {
        assetType: 'ERC1155',
        from: zero,
        to: OTHER,
        contractAddress: items,
        tokenId: '0x1',
        rawAmount: '3',
        amount: '3',
      },
      {
        assetType: 'ERC1155',
        from: zero,
        to: OTHER,
        contractAddress: items,
        tokenId: '0x2',
        rawAmount: '4',
        amount: '4',
      },
    ])
    // Sending more than the balance reverts: no changes, the error says why.
    const tooMuch = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [OTHER, 10n ** 30n] })
    const failed = await alchemy.transact.simulateAssetChanges({ from: HOLDER, to: usd, data: tooMuch })
    expect(failed.changes).toEqual([])
    expect(failed.error?.message).toMatch(/revert/i)
  })
})
