import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Alchemy, AssetTransfersCategory, Network, TokenBalanceType } from 'alchemy-sdk'
import { encodeFunctionData, erc20Abi, parseAbi } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

const HOLDER = '0x000000000000000000000000000000000000a11c' as Address
const OTHER = '0x000000000000000000000000000000000000b0b0' as Address
const LOGO = 'https://tokens.example/dusd.png'
const hex32 = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`

/**
 * The real alchemy-sdk, with only its `url` pointed at Halyard's compat root, against anvil with
 * real ERC-20 contracts indexed by Halyard: the token methods, receipts and core calls.
 */
describe('alchemy-sdk against the compat root: tokens, receipts, core', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let url: string
  let alchemy: Alchemy
  let usd: Address
  let gold: Address
  let gone: Address
  let unlisted: Address
  let mintBlock: bigint

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    storage = await openStorage({})
    dev = new Devnet(anvil.url)
    usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    gold = await dev.deploy('DemoERC20', ['Gold', 'DGLD', 18])
    gone = await dev.deploy('DemoERC20', ['Gone', 'GONE', 18])
    unlisted = await dev.deploy('DemoERC20', ['Quiet', 'QT', 0])
    const dir = mkdtempSync(path.join(tmpdir(), 'alc-tokens-'))
    const list = path.join(dir, 'list.json')
    const entry = (address: Address, name: string, symbol: string, decimals: number, logoURI?: string) => ({
      chainId: anvil.chainId,
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
        tokens: [entry(usd, 'Dollar', 'DUSD', 6, LOGO), entry(gold, 'Gold', 'DGLD', 18)],
      }),
    )
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil, { data: { tokenLists: [list] } })],
      storage,
    })
    key = await h.createKey()
    url = `${h.baseUrl}/alchemy/eth-devnet/v2/${key}`
    // `network` only sets what ethers believes the chain is; a custom url is used as is.
    alchemy = new Alchemy({ url, network: Network.ETH_MAINNET, maxRetries: 0 })
    await dev.send('DemoERC20', usd, 'mint', [HOLDER, 1_234_567_891n])
    await dev.send('DemoERC20', gold, 'mint', [HOLDER, 10n ** 18n + 1n])
    await dev.send('DemoERC20', gone, 'mint', [DEV_ACCOUNT, 7n])
    await dev.send('DemoERC20', gone, 'transfer', [HOLDER, 7n])
    mintBlock = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await dev.send('DemoERC20', unlisted, 'mint', [OTHER, 3n])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  const rpc = (method: string, params: unknown[]) => postRpc(url, undefined, call(method, params))
  const errorOf = async (method: string, params: unknown[]) => {
    const res = await rpc(method, params)
    expect(res.status).toBe(200)
    return res.json.error as { code: number; message: string }
  }

  it('getTokenBalances (erc20, the default): every token the index saw for the holder, exact', async () => {
    const expected = [
      { contractAddress: usd, tokenBalance: hex32(1_234_567_891n), error: null },
      { contractAddress: gold, tokenBalance: hex32(10n ** 18n + 1n), error: null },
      { contractAddress: gone, tokenBalance: hex32(7n), error: null },
    ]
    const plain = await alchemy.core.getTokenBalances(HOLDER)
    expect(plain).toEqual({ address: HOLDER, tokenBalances: expected })
    const typed = await alchemy.core.getTokenBalances(HOLDER, { type: TokenBalanceType.ERC20 })
    expect(typed.tokenBalances).toEqual(expected)
  })

  it('getTokenBalances with a contract list reads exactly those, and names a non-token', async () => {
    const res = await alchemy.core.getTokenBalances(HOLDER, [gold, unlisted, OTHER])
    expect(res.tokenBalances).toEqual([
      { contractAddress: gold, tokenBalance: hex32(10n ** 18n + 1n), error: null },
      { contractAddress: unlisted, tokenBalance: hex32(0n), error: null },
      { contractAddress: OTHER, tokenBalance: null, error: 'balanceOf(address) did not return a uint256' },
    ])
  })

  it('getTokenBalances DEFAULT_TOKENS reads the network token list', async () => {
    const res = await alchemy.core.getTokenBalances(HOLDER, { type: TokenBalanceType.DEFAULT_TOKENS })
    expect(res.tokenBalances).toEqual([
      { contractAddress: usd, tokenBalance: hex32(1_234_567_891n), error: null },
      { contractAddress: gold, tokenBalance: hex32(10n ** 18n + 1n), error: null },
    ])
  })

  it('maxCount and pageKey walk the erc20 set once, and the SDK passes pageKey back', async () => {
    const seen: string[] = []
    let pageKey: string | undefined
    for (let i = 0; i < 5; i++) {
      const res = await rpc('alchemy_getTokenBalances', [
        HOLDER,
        'erc20',
        { maxCount: 2, ...(pageKey ? { pageKey } : {}) },
      ])
      const r = res.json.result as { tokenBalances: { contractAddress: string }[]; pageKey?: string }
      seen.push(...r.tokenBalances.map((t) => t.contractAddress))
      pageKey = r.pageKey
      if (!pageKey) break
    }
    expect(seen).toEqual([usd, gold, gone])
    const first = await rpc('alchemy_getTokenBalances', [HOLDER, 'erc20', { maxCount: 1 }])
    const key1 = (first.json.result as { pageKey: string }).pageKey
    const next = await alchemy.core.getTokenBalances(HOLDER, { type: TokenBalanceType.ERC20, pageKey: key1 })
    expect(next.tokenBalances.map((t) => t.contractAddress)).toEqual([gold, gone])
    expect(next.pageKey).toBeUndefined()
  })

  it('getTokensForOwner: balances formatted with each token metadata', async () => {
    const res = await alchemy.core.getTokensForOwner(HOLDER)
    expect(res.tokens).toEqual([
      {
        contractAddress: usd,
        rawBalance: '1234567891',
        name: 'Dollar',
        symbol: 'DUSD',
        decimals: 6,
        logo: LOGO,
        balance: '1234.567891',
      },
      {
        contractAddress: gold,
        rawBalance: '1000000000000000001',
        name: 'Gold',
        symbol: 'DGLD',
        decimals: 18,
        logo: undefined,
        balance: '1.000000000000000001',
      },
      {
        contractAddress: gone,
        rawBalance: '7',
        name: 'Gone',
        symbol: 'GONE',
        decimals: 18,
        logo: undefined,
        balance: '0.000000000000000007',
      },
    ])
  })

  it('getTokenMetadata exact, with the listed logo; a non-token answers nulls', async () => {
    expect(await alchemy.core.getTokenMetadata(usd)).toEqual({
      name: 'Dollar',
      symbol: 'DUSD',
      decimals: 6,
      logo: LOGO,
    })
    expect(await alchemy.core.getTokenMetadata(unlisted)).toEqual({
      name: 'Quiet',
      symbol: 'QT',
      decimals: 0,
      logo: null,
    })
    expect(await alchemy.core.getTokenMetadata(OTHER)).toEqual({
      name: null,
      symbol: null,
      decimals: null,
      logo: null,
    })
  })

  it('getTransactionReceipts by number and by hash equal the node own eth_getBlockReceipts', async () => {
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
    const err = await errorOf('alchemy_simulateExecution', [{}])
    expect(err.code).toBe(-32601)
    expect(err.message).toMatch(/alchemy_simulateExecution.*not served/)
    await expect(alchemy.core.send('alchemy_getGasOptimizedTransactionStatus', ['0x1'])).rejects.toThrow(
      /not served/,
    )
  })

  it('malformed params are -32602 naming the field; 1,501 contracts name the limit', async () => {
    const many = Array.from({ length: 1501 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
    const cases: [string, unknown[], RegExp][] = [
      [
        'alchemy_getTokenBalances',
        ['0x12', 'erc20'],
        /params\[0\]: must be a 0x-prefixed 20-byte hex address/,
      ],
      [
        'alchemy_getTokenBalances',
        [HOLDER, many],
        /params\[1\]: at most 1500 contract addresses per call \(got 1501\)/,
      ],
      ['alchemy_getTokenBalances', [HOLDER, []], /params\[1\]: the contract list is empty/],
      ['alchemy_getTokenBalances', [HOLDER, [usd, 'nope']], /params\[1\]\[1\]: must be a 0x-prefixed/],
      ['alchemy_getTokenBalances', [HOLDER, 'NFT'], /params\[1\]: must be "erc20", "DEFAULT_TOKENS"/],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { maxCount: -1 }], /params\[2\]\.maxCount/],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { maxCount: 1e12 }], /params\[2\]\.maxCount/],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { pageKey: 'garbage' }], /params\[2\]\.pageKey/],
      ['alchemy_getTokenBalances', [], /params: must be \[address, "erc20"/],
      ['alchemy_getTokenMetadata', ['not-an-address'], /params\[0\]: must be a 0x-prefixed/],
      [
        'alchemy_getTransactionReceipts',
        [{}],
        /params\[0\]: must carry exactly one of blockNumber and blockHash/,
      ],
      ['alchemy_getTransactionReceipts', [{ blockNumber: 'yesterday' }], /params\[0\]\.blockNumber/],
    ]
    for (const [method, params, message] of cases) {
      const err = await errorOf(method, params)
      expect(err, `${method} ${JSON.stringify(params).slice(0, 80)}`).toMatchObject({ code: -32602 })
      expect(err.message).toMatch(message)
    }
  })
  it('answers hostile params with -32601/-32602 per call, never an internal error', async () => {
    const many = Array.from({ length: 1501 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
    const calls: [string, unknown][] = [
      ['alchemy_getTokenBalances', [HOLDER, many]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { maxCount: 1e300 }]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { maxCount: '0xffffffffffffffffffff' }]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { pageKey: 'A'.repeat(10_000) }]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { pageKey: { a: 1 } }]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', { pageKey: OTHER }]],
      ['alchemy_getTokenBalances', [HOLDER, [HOLDER, null, 7]]],
      ['alchemy_getTokenBalances', [{ toString: 1 }]],
      ['alchemy_getTokenBalances', [HOLDER, 'erc20', {}, 'extra']],
      ['alchemy_getTokenMetadata', [{}]],
      ['alchemy_getTransactionReceipts', [{ blockNumber: `0x${'f'.repeat(100)}` }]],
      ['alchemy_getTransactionReceipts', [{ blockHash: 1, blockNumber: 'latest' }]],
      ['alchemy_requestGasAndPaymasterAndData', [{ policyId: {}, userOperation: 'x' }]],
      ['rundler_maxPriorityFeePerGas', []],
      ['eth_sendUserOperation', [{ sender: 1 }, 'x']],
      ['pm_getPaymasterData', [{}, 'x', 1, 'ctx']],
      ['alchemy___proto__', []],
      ['alchemy_constructor', []],
    ]
    const res = await postRpc(
      url,
      undefined,
      calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params })),
    )
    expect(res.status).toBe(200)
    const answers = res.json as unknown as { id: number; error?: { code: number; message: string } }[]
    expect(answers).toHaveLength(calls.length)
    for (const a of answers) {
      const [method, params] = calls[a.id] as [string, unknown]
      const where = `${method} ${JSON.stringify(params).slice(0, 60)}`
      expect(a.error, where).toBeDefined()
      expect([-32601, -32602], `${where}: ${a.error?.message}`).toContain(a.error?.code)
    }
  })
  it('simulateAssetChanges: native value and ERC-20 transfers and approvals from debug_traceCall', async () => {
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
