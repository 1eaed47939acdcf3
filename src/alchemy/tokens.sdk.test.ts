import { TokenBalanceType } from 'alchemy-sdk'
import { describe, expect, it } from 'vitest'
import { HOLDER, hex32, LOGO, OTHER, tokensFixture } from '../../test/fixtures/alchemy/tokens-fixture.ts'
import { postRpc } from '../../test/helpers/halyard.ts'

/**
 * The real alchemy-sdk, with only its `url` pointed at Halyard's compat root, against anvil with
 * real ERC-20 contracts indexed by Halyard: the token balance and metadata methods, and how they
 * answer malformed and hostile params. Receipts, core calls and simulation: core.sdk.test.ts.
 */
describe('alchemy-sdk against the compat root: tokens', () => {
  const fx = tokensFixture()
  const { rpc, errorOf } = fx

  it('getTokenBalances (erc20, the default): every token the index saw for the holder, exact', async () => {
    const { alchemy, usd, gold, gone } = fx
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
    const { alchemy, gold, unlisted } = fx
    const res = await alchemy.core.getTokenBalances(HOLDER, [gold, unlisted, OTHER])
    expect(res.tokenBalances).toEqual([
      { contractAddress: gold, tokenBalance: hex32(10n ** 18n + 1n), error: null },
      { contractAddress: unlisted, tokenBalance: hex32(0n), error: null },
      { contractAddress: OTHER, tokenBalance: null, error: 'balanceOf(address) did not return a uint256' },
    ])
  })

  it('getTokenBalances DEFAULT_TOKENS reads the network token list', async () => {
    const { alchemy, usd, gold } = fx
    const res = await alchemy.core.getTokenBalances(HOLDER, { type: TokenBalanceType.DEFAULT_TOKENS })
    expect(res.tokenBalances).toEqual([
      { contractAddress: usd, tokenBalance: hex32(1_234_567_891n), error: null },
      { contractAddress: gold, tokenBalance: hex32(10n ** 18n + 1n), error: null },
    ])
  })

  it('maxCount and pageKey walk the erc20 set once, and the SDK passes pageKey back', async () => {
    const { alchemy, usd, gold, gone } = fx
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
    const { alchemy, usd, gold, gone } = fx
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
    const { alchemy, usd, unlisted } = fx
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

  it('malformed params are -32602 naming the field; 1,501 contracts name the limit', async () => {
    const { usd } = fx
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
    const { url } = fx
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
})
