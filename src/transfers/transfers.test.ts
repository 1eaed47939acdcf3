import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import type { TransferItem, TransferList } from './service.ts'

const HOLDER = '0x00000000000000000000000000000000000a11ce' as Address
const OTHER = '0x0000000000000000000000000000000000000b0b' as Address
const ETH = 10n ** 18n

interface Answer {
  status: number
  body: TransferList & { error?: { code: string; message: string } }
}

/**
 * `GET /v1/transfers/{chain}/{address}` over real HTTP, on transfers anvil mined and the real
 * indexer wrote: native (external), ERC-20, ERC-721 and an ERC-1155 batch, sent and received.
 */
describeEachStorage('transfer API on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  /** The same database, on a network configured without internal transfers (indexer off). */
  let untraced: TestHalyard
  let dev: Devnet
  let key: string
  let usd: Address
  let nft: Address
  let items: Address
  const hashes: Record<string, Hash> = {}

  const get = async (path: string, via: TestHalyard = h): Promise<Answer> => {
    const res = await fetch(`${via.baseUrl}/transfers/ethereum-devnet/${path}`, {
      headers: { 'x-api-key': key },
    })
    return { status: res.status, body: (await res.json()) as Answer['body'] }
  }
  const list = async (path: string) => {
    const a = await get(path)
    expect(a.status, JSON.stringify(a.body)).toBe(200)
    return a.body
  }
  /** Every page, `limit` at a time, following next_cursor. */
  const walk = async (addr: string, q: string, limit: number) => {
    const out: TransferItem[] = []
    let cursor: string | null = null
    for (let i = 0; i < 100; i++) {
      const page: TransferList = await list(
        `${addr}?limit=${limit}${q}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      expect(page.transfers.length).toBeLessThanOrEqual(limit)
      out.push(...page.transfers)
      cursor = page.next_cursor
      if (cursor === null) return out
    }
    throw new Error('pagination did not end')
  }
  const id = (t: TransferItem) =>
    `${t.tx_hash}/${t.tx_index}/${t.trace_index}/${t.log_index}/${t.batch_index}`

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    nft = await dev.deploy('DemoERC721', ['Sailors', 'SAIL'])
    items = await dev.deploy('DemoERC1155', ['data:,{}', 'Items', 'ITEM'])
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    untraced = await startTestHalyard({
      networks: [
        anvilNetwork(anvil, { indexer: { enabled: false, maxBlockRange: 2000, internalTransfers: 'off' } }),
      ],
      storage,
    })
    key = await h.createKey()
    hashes.mint = await dev.send('DemoERC20', usd, 'mint', [HOLDER, 1_000_000n])
    hashes.nft = await dev.send('DemoERC721', nft, 'mint', [HOLDER, 7n, 'data:,{}'])
    hashes.batch = await dev.send('DemoERC1155', items, 'mintBatch', [HOLDER, [1n, 2n], [10n, 3n]])
    hashes.eth = await dev.rpc<Hash>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: HOLDER, value: `0x${ETH.toString(16)}` },
    ])
    await dev.client.waitForTransactionReceipt({ hash: hashes.eth, pollingInterval: 50 })
    // HOLDER sends: tokens to OTHER and to itself (one row, listed once under "both").
    await dev.rpc('anvil_impersonateAccount', [HOLDER])
    const holder = new Devnet(anvil.url, HOLDER)
    hashes.send = await holder.send('DemoERC20', usd, 'transfer', [OTHER, 250_000n])
    hashes.self = await holder.send('DemoERC20', usd, 'transfer', [HOLDER, 1n])
    hashes.nftOut = await holder.send('DemoERC721', nft, 'transferFrom', [HOLDER, OTHER, 7n])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head, 90_000)
  })
  afterAll(async () => {
    await untraced?.close()
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('lists every transfer of an address newest first, in the wire shape', async () => {
    const body = await list(`${HOLDER}?category=erc20,erc721,erc1155,external`)
    expect(body).toMatchObject({ address: HOLDER, chain: 'ethereum-devnet', next_cursor: null })
    const by = (hash: Hash) => body.transfers.filter((t) => t.tx_hash === hash)
    expect(by(hashes.mint as Hash)).toEqual([
      expect.objectContaining({
        category: 'erc20',
        from: '0x0000000000000000000000000000000000000000',
        to: HOLDER,
        contract: usd,
        value: '1000000',
        formatted_value: '1',
        symbol: 'DUSD',
        decimals: 6,
        token_id: null,
        tx_index: null,
        trace_index: null,
      }),
    ])
    expect(by(hashes.nft as Hash)).toEqual([
      expect.objectContaining({
        category: 'erc721',
        contract: nft,
        token_id: '7',
        value: '1',
        symbol: 'SAIL',
      }),
    ])
    expect(by(hashes.batch as Hash).map((t) => [t.token_id, t.value, t.batch_index])).toEqual([
      ['2', '3', 1],
      ['1', '10', 0],
    ])
    expect(by(hashes.eth as Hash)).toEqual([
      expect.objectContaining({
        category: 'external',
        from: DEV_ACCOUNT,
        to: HOLDER,
        contract: null,
        value: ETH.toString(),
        formatted_value: '1',
        symbol: 'ETH',
        decimals: 18,
        trace_index: 0,
        log_index: null,
      }),
    ])
    // Sent to itself: one token row under "both"; the transaction itself is an external row (value 0).
    expect(by(hashes.self as Hash).map((t) => t.category)).toEqual(['erc20', 'external'])
    const blocks = body.transfers.map((t) => t.block_number)
    expect(blocks).toEqual([...blocks].sort((a, b) => b - a))
    expect(body.transfers[0]?.tx_hash).toBe(hashes.nftOut)
    expect(typeof body.transfers[0]?.block_timestamp).toBe('number')
  })

  it('walks the same list two at a time in both orders and directions', async () => {
    for (const direction of ['both', 'from', 'to']) {
      const q = `&direction=${direction}&category=erc20,erc721,erc1155,external`
      const whole = (await list(`${HOLDER}?limit=100${q}`)).transfers.map(id)
      expect(whole.length).toBeGreaterThan(2)
      expect(new Set(whole).size).toBe(whole.length)
      expect((await walk(HOLDER, q, 2)).map(id)).toEqual(whole)
      expect((await walk(HOLDER, `${q}&order=asc`, 2)).map(id)).toEqual([...whole].reverse())
    }
  })

  it('filters by direction, category, contract and block range', async () => {
    // HOLDER's own transactions are external rows (value 0) beside the token rows they made.
    const from = (await list(`${HOLDER}?direction=from`)).transfers
    expect(from.map((t) => `${t.tx_hash}:${t.category}`)).toEqual(
      [
        [hashes.nftOut, 'erc721'],
        [hashes.nftOut, 'external'],
        [hashes.self, 'erc20'],
        [hashes.self, 'external'],
        [hashes.send, 'erc20'],
        [hashes.send, 'external'],
      ].map(([hash, c]) => `${hash}:${c}`),
    )
    const to = (await list(`${HOLDER}?direction=to&category=erc20`)).transfers
    expect(to.map((t) => t.tx_hash)).toEqual([hashes.self, hashes.mint])
    const byContract = (await list(`${HOLDER}?contract=${nft}`)).transfers
    expect(byContract.map((t) => t.tx_hash)).toEqual([hashes.nftOut, hashes.nft])
    const all = (await list(`${HOLDER}?category=erc20,erc721,erc1155,external`)).transfers
    const mid = all[Math.floor(all.length / 2)]?.block_number as number
    const ranged = (await list(`${HOLDER}?from_block=${mid}&to_block=${mid}`)).transfers
    expect(ranged.length).toBeGreaterThan(0)
    expect(ranged.every((t) => t.block_number === mid)).toBe(true)
  })

  it('answers bad input with a 400 naming the parameter', async () => {
    const cases: [string, string][] = [
      [`${HOLDER}?cursor=garbage`, 'cursor'],
      [`${HOLDER}?cursor=${Buffer.from('t1.1.7.0.0').toString('base64url')}`, 'cursor'],
      [`${HOLDER}?category=erc20,nfts`, 'category'],
      [`${HOLDER}?category=`, 'category'],
      [`${HOLDER}?direction=sideways`, 'direction'],
      [`${HOLDER}?order=random`, 'order'],
      [`${HOLDER}?limit=0`, 'limit'],
      [`${HOLDER}?limit=101`, 'limit'],
      [`${HOLDER}?from_block=-1`, 'from_block'],
      [`${HOLDER}?from_block=9&to_block=3`, 'from_block'],
      [`${HOLDER}?contract=0x12`, 'contract'],
      ['0xnothex', 'address'],
    ]
    for (const [path, name] of cases) {
      const { status, body } = await get(path)
      expect(status, path).toBe(400)
      expect(body.error?.code).toBe('invalid_request')
      expect(body.error?.message, path).toContain(name)
    }
  })

  it('refuses the internal category where the index has no internal transfers, and leaves it out by default', async () => {
    const refused = await get(`${HOLDER}?category=internal,erc20`, untraced)
    expect(refused.status).toBe(400)
    expect(refused.body.error?.message).toMatch(/internal category is not available on ethereum-devnet/)
    const dflt = await get(HOLDER, untraced)
    expect(dflt.status).toBe(200)
    expect(dflt.body.transfers.length).toBeGreaterThan(0)
    expect(dflt.body.transfers.some((t) => t.category === 'internal')).toBe(false)
  })

  it('answers alchemy_getAssetTransfers through the compatibility root', async () => {
    const url = `${h.baseUrl}/alchemy/ethereum-devnet/v2/${key}`
    const { status, json } = await postRpc(
      url,
      undefined,
      call('alchemy_getAssetTransfers', [
        { toAddress: HOLDER, category: ['erc1155', 'erc20'], withMetadata: true },
      ]),
    )
    expect(status).toBe(200)
    const result = json.result as { transfers: Record<string, unknown>[]; pageKey?: string }
    expect(result.pageKey).toBeUndefined()
    expect(result.transfers.map((t) => t.category)).toEqual(['erc20', 'erc1155', 'erc20'])
    expect(result.transfers[1]).toMatchObject({
      hash: hashes.batch,
      erc1155Metadata: [
        { tokenId: `0x${'1'.padStart(64, '0')}`, value: '0xa' },
        { tokenId: `0x${'2'.padStart(64, '0')}`, value: '0x3' },
      ],
      asset: 'ITEM',
    })
    expect(result.transfers[0]).toMatchObject({
      value: 1,
      asset: 'DUSD',
      rawContract: { decimal: '0x6', value: '0xf4240' },
    })
    expect(result.transfers[0]?.metadata).toMatchObject({
      blockTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    })
  })
})
