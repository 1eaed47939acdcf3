import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  insertSeed,
  SEED_ITEMS,
  SEED_NFT,
  SEED_OTHER,
  SEED_TOKEN,
  type SeedRow,
  seedRows,
} from '../../test/fixtures/transfers/seed.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type Network, NetworkRegistry } from '../chains/registry.ts'
import { RPC_INVALID_PARAMS, RpcError } from '../jsonrpc.ts'
import { networkSchema } from '../server/config-schema.ts'
import type { Storage } from '../storage/database.ts'
import { TokenService } from '../tokens/service.ts'
import { saveMetas } from '../tokens/store.ts'
import type { Address } from '../types.ts'
import {
  type AssetTransfer,
  assetTransfersCost,
  getAssetTransfers,
  parseAssetTransfersParams,
} from './asset-transfers.ts'
import { TransferService } from './service.ts'
import { comparePosition } from './store.ts'

const HOLDER = '0x00000000000000000000000000000000000a11ce' as Address
const CHECKSUMMED = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'

function refusal(params: unknown[]): string {
  try {
    parseAssetTransfersParams(params)
  } catch (err) {
    expect(err).toBeInstanceOf(RpcError)
    expect((err as RpcError).code).toBe(RPC_INVALID_PARAMS)
    return (err as RpcError).message
  }
  throw new Error(`accepted ${JSON.stringify(params)}`)
}

describe('alchemy_getAssetTransfers params', () => {
  it("applies Alchemy's defaults", () => {
    const p = parseAssetTransfersParams([{ category: ['erc20'] }])
    expect(p).toMatchObject({ order: 'asc', excludeZeroValue: true, withMetadata: false, maxCount: 1000 })
    expect(p.fromBlock).toBeUndefined()
    expect(p.toBlock).toBeUndefined()
    expect(p.pageKey).toBeUndefined()
  })

  it('reads every parameter in the forms the SDK sends', () => {
    const p = parseAssetTransfersParams([
      {
        fromBlock: '0x10',
        toBlock: 'latest',
        fromAddress: CHECKSUMMED,
        toAddress: HOLDER,
        contractAddresses: [SEED_TOKEN],
        category: ['external', 'erc1155', 'specialnft'],
        order: 'desc',
        withMetadata: true,
        excludeZeroValue: false,
        maxCount: '0x5',
      },
    ])
    expect(p).toMatchObject({
      fromBlock: 16n,
      fromAddress: CHECKSUMMED.toLowerCase(),
      toAddress: HOLDER,
      contractAddresses: [SEED_TOKEN],
      order: 'desc',
      withMetadata: true,
      excludeZeroValue: false,
      maxCount: 5,
    })
    expect(p.toBlock).toBeUndefined()
    expect(parseAssetTransfersParams([{ category: ['erc20'], fromBlock: 'earliest' }]).fromBlock).toBe(0n)
  })

  it('answers -32602 naming the field for malformed params', () => {
    const cases: [unknown[], string][] = [
      [[], 'expected one object'],
      [[{ category: ['erc20'] }, {}], 'expected one object'],
      [['erc20'], 'expected one object'],
      [[{}], 'category'],
      [[{ category: [] }], 'category'],
      [[{ category: 'erc20' }], 'category'],
      [[{ category: ['erc9999'] }], 'category'],
      [[{ category: ['erc20'], fromBlock: 'yesterday' }], 'fromBlock'],
      [[{ category: ['erc20'], toBlock: 12 }], 'toBlock'],
      [[{ category: ['erc20'], fromAddress: '0x12' }], 'fromAddress'],
      [[{ category: ['erc20'], toAddress: CHECKSUMMED.replace('F', 'f').replace('d', 'D') }], 'toAddress'],
      [[{ category: ['erc20'], contractAddresses: ['nope'] }], 'contractAddresses'],
      [[{ category: ['erc20'], contractAddresses: Array(1001).fill(SEED_TOKEN) }], 'contractAddresses'],
      [[{ category: ['erc20'], order: 'up' }], 'order'],
      [[{ category: ['erc20'], withMetadata: 'yes' }], 'withMetadata'],
      [[{ category: ['erc20'], excludeZeroValue: 1 }], 'excludeZeroValue'],
      [[{ category: ['erc20'], maxCount: '0x0' }], 'maxCount'],
      [[{ category: ['erc20'], maxCount: '0x3e9' }], 'maxCount'],
      [[{ category: ['erc20'], maxCount: -1 }], 'maxCount'],
      [[{ category: ['erc20'], maxCount: '0xffffffffffffffffffff' }], 'maxCount'],
      [[{ category: ['erc20'], maxCount: 'many' }], 'maxCount'],
      [[{ category: ['erc20'], pageKey: 'garbage' }], 'pageKey'],
      [[{ category: ['erc20'], pageKey: 42 }], 'pageKey'],
    ]
    for (const [params, field] of cases) expect(refusal(params), JSON.stringify(params)).toContain(field)
  })

  it('costs 20 CU per started hundred of maxCount', () => {
    expect(assetTransfersCost([{ category: ['erc20'] }])).toBe(200)
    expect(assetTransfersCost([{ maxCount: '0x64' }])).toBe(20)
    expect(assetTransfersCost([{ maxCount: '0x65' }])).toBe(40)
    expect(assetTransfersCost(['junk'])).toBe(200)
  })
})

describeEachStorage('alchemy_getAssetTransfers on $name', (backend) => {
  let storage: Storage
  let net: Network
  let transfers: TransferService
  let internalWhy: string | null = null
  const rows = seedRows(HOLDER, 120)

  beforeAll(async () => {
    storage = await backend.open()
    await insertSeed(storage.db, 'ethereum-devnet', rows)
    await saveMetas(storage.db, 'ethereum-devnet', [
      { contract: SEED_TOKEN, name: 'Dollar', symbol: 'DUSD', decimals: 6 },
      { contract: SEED_NFT, name: 'Sailors', symbol: 'SAIL', decimals: null },
      { contract: SEED_ITEMS, name: 'Items', symbol: 'ITEM', decimals: null },
    ])
    const registry = new NetworkRegistry([
      networkSchema.parse({
        chain: 'ethereum',
        network: 'devnet',
        chainId: 31337,
        upstreams: [{ url: 'http://127.0.0.1:9' }],
      }),
    ])
    net = registry.getBySlug('ethereum-devnet')
    const tokens = new TokenService({
      db: storage.db,
      sources: () => {
        throw new Error('no price sources in this test')
      },
    })
    transfers = new TransferService({
      db: storage.db,
      metas: (n, c) => tokens.metas(n, c),
      internalUnavailable: () => internalWhy,
    })
  })
  afterAll(async () => {
    await storage?.close()
  })

  const call = (p: Record<string, unknown>) =>
    getAssetTransfers(transfers, net, parseAssetTransfersParams([p]))

  /** Alchemy's transfers for a filter: one per row, an ERC-1155 batch log as one. */
  function expected(keep: (r: SeedRow) => boolean, order: 'asc' | 'desc'): string[] {
    const ids: string[] = []
    const sorted = rows.filter(keep).sort(comparePosition)
    if (order === 'desc') sorted.reverse()
    for (const r of sorted) {
      const id =
        r.source === 0
          ? r.category === 'external'
            ? `${r.txHash}:external`
            : `${r.txHash}:internal:${r.b}`
          : `${r.txHash}:log:${r.a}`
      if (ids.at(-1) !== id) ids.push(id)
    }
    return ids
  }

  it('builds the result shape of every category', async () => {
    const { transfers: got } = await call({
      fromAddress: HOLDER,
      category: ['external', 'internal', 'erc20', 'erc721', 'erc1155'],
      withMetadata: true,
      excludeZeroValue: false,
      maxCount: '0x8',
    })
    const by = (c: string) => got.find((t) => t.category === c) as AssetTransfer
    // i = 0: block 1, an external transfer of value 0 sent to itself.
    expect(by('external')).toEqual({
      uniqueId: `0x${'1'.padStart(64, '0')}:external`,
      category: 'external',
      blockNum: '0x1',
      from: HOLDER,
      to: HOLDER,
      value: 0,
      erc721TokenId: null,
      erc1155Metadata: null,
      tokenId: null,
      asset: 'ETH',
      hash: `0x${'1'.padStart(64, '0')}`,
      rawContract: { value: '0x0', address: null, decimal: '0x12' },
      metadata: { blockTimestamp: new Date((1_700_000_000 + 12) * 1000).toISOString() },
    })
    // i = 2: erc20, 3 * 10^15 raw at 6 decimals.
    expect(by('erc20')).toMatchObject({
      value: 3_000_000_000,
      asset: 'DUSD',
      erc721TokenId: null,
      rawContract: { value: `0x${(3n * 10n ** 15n).toString(16)}`, address: SEED_TOKEN, decimal: '0x6' },
    })
    // i = 11: the first ERC-721 it sent (i = 4 was received).
    expect(by('erc721')).toMatchObject({
      value: null,
      asset: 'SAIL',
      erc721TokenId: `0x${'b'.padStart(64, '0')}`,
      tokenId: `0x${'b'.padStart(64, '0')}`,
      rawContract: { value: null, address: SEED_NFT, decimal: null },
    })
    // i = 5: an ERC-1155 batch of ids 1, 2, 3: one transfer.
    expect(by('erc1155')).toMatchObject({
      uniqueId: `0x${'6'.padStart(64, '0')}:log:1`,
      value: null,
      tokenId: null,
      erc1155Metadata: [1, 2, 3].map((id) => ({
        tokenId: `0x${String(id).padStart(64, '0')}`,
        value: '0x5',
      })),
      rawContract: { value: null, address: SEED_ITEMS, decimal: null },
    })
    expect(by('internal').uniqueId).toMatch(/:internal:\d$/)
  })

  for (const order of ['asc', 'desc'] as const) {
    for (const side of ['fromAddress', 'toAddress'] as const) {
      it(`walks ${side} ${order} with maxCount 0x5 and pageKey: whole batches, no duplicates, no gaps`, async () => {
        const seen: string[] = []
        let pageKey: string | undefined
        for (let pages = 0; ; pages++) {
          expect(pages).toBeLessThan(200)
          const out = await call({
            [side]: HOLDER,
            category: ['external', 'erc20', 'erc721', 'erc1155'],
            order: order === 'asc' ? undefined : 'desc',
            maxCount: '0x5',
            pageKey,
          })
          expect(out.transfers.length).toBeLessThanOrEqual(5)
          for (const t of out.transfers)
            if (t.category === 'erc1155') expect([1, 3]).toContain(t.erc1155Metadata?.length)
          seen.push(...out.transfers.map((t) => t.uniqueId))
          if (out.pageKey === undefined) break
          expect(out.transfers.length).toBe(5)
          pageKey = out.pageKey
        }
        const keep = (r: SeedRow) =>
          (side === 'fromAddress' ? r.from === HOLDER : r.to === HOLDER) &&
          r.category !== 'internal' &&
          r.value !== 0n
        expect(seen).toEqual(expected(keep, order))
      })
    }
  }

  it('filters by contract, block range and a from/to pair; excludeZeroValue defaults to true', async () => {
    const pair = await call({
      fromAddress: HOLDER,
      toAddress: SEED_OTHER,
      category: ['erc20'],
      contractAddresses: [SEED_TOKEN],
      fromBlock: '0x5',
      toBlock: '0x14',
    })
    expect(pair.transfers.map((t) => t.uniqueId)).toEqual(
      expected(
        (r) =>
          r.from === HOLDER &&
          r.to === SEED_OTHER &&
          r.category === 'erc20' &&
          r.block >= 5n &&
          r.block <= 20n &&
          r.value !== 0n,
        'asc',
      ),
    )
    const withZero = await call({ fromAddress: HOLDER, category: ['external'], excludeZeroValue: false })
    const noZero = await call({ fromAddress: HOLDER, category: ['external'] })
    expect(withZero.transfers.some((t) => t.value === 0)).toBe(true)
    expect(noZero.transfers.some((t) => t.value === 0)).toBe(false)
  })

  it('answers specialnft with no rows and refuses internal where the index has none', async () => {
    expect(await call({ fromAddress: HOLDER, category: ['specialnft'] })).toEqual({ transfers: [] })
    internalWhy = 'tracing is off for this network'
    try {
      await expect(call({ fromAddress: HOLDER, category: ['internal'] })).rejects.toMatchObject({
        code: RPC_INVALID_PARAMS,
        message: expect.stringContaining('tracing is off'),
      })
      // Not asked: not refused.
      expect((await call({ fromAddress: HOLDER, category: ['erc20'] })).transfers.length).toBeGreaterThan(0)
    } finally {
      internalWhy = null
    }
  })
})
