import { Alchemy, Network, NftFilters, NftTokenType } from 'alchemy-sdk'
import { beforeAll, expect, it } from 'vitest'
import { ALICE, BOB, dataJson, nftsFixture } from '../../test/fixtures/nfts/nfts-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import type { Address } from '../types.ts'

/**
 * The NFT API v3 at the Alchemy-compatible root, driven by the real alchemy-sdk (only `url`
 * set) against Halyard on anvil with real ERC-721 and ERC-1155 contracts, indexed by Halyard.
 */

const CAROL = '0x0000000000000000000000000000000000000ca7' as Address
const RANGE = 150

interface Answer {
  status: number
  body: Record<string, unknown> & { error?: { code: string; message: string; status: number } }
  text: string
}

describeEachStorage('Alchemy NFT API v3 on $name', (backend) => {
  const fx = nftsFixture(backend)
  let alchemy: Alchemy
  let root: string
  let nft: Address
  let items: Address
  let range: Address
  let erc20: Address

  const call = async (path: string, init?: RequestInit): Promise<Answer> => {
    const res = await fetch(`${root}/${path}`, init)
    const text = await res.text()
    return { status: res.status, body: JSON.parse(text), text }
  }
  const lower = (a: string) => a.toLowerCase()

  beforeAll(async () => {
    const { dev, h } = fx
    root = `${h.baseUrl}/alchemy/eth-devnet/v2/${fx.key}`
    alchemy = new Alchemy({ url: root, network: Network.ETH_MAINNET })
    nft = await dev.deploy('DemoERC721', ['Sailors', 'SAIL'])
    for (let id = 1n; id <= 5n; id++)
      await dev.send('DemoERC721', nft, 'mint', [
        ALICE,
        id,
        dataJson({ name: `Sailor #${id}`, description: 'crew', image: `ipfs://QmSailor/${id}.png` }),
      ])
    await dev.send('DemoERC721', nft, 'mint', [BOB, 6n, dataJson({ name: 'Sailor #6' })])
    items = await dev.deploy('DemoERC1155', ['data:application/json,{"name":"Thing {id}"}', 'Things', 'THG'])
    await dev.send('DemoERC1155', items, 'mintBatch', [ALICE, [7n, 8n], [5n, 6n]])
    await dev.send('DemoERC1155', items, 'mint', [BOB, 7n, 2n])
    range = await dev.deploy('DemoERC721', ['Range', 'RNG'])
    await dev.send('DemoERC721', range, 'mintRange', [CAROL, 1n, BigInt(RANGE)])
    erc20 = await dev.deploy('DemoERC20', ['Coin', 'CN', 18])
    await fx.synced()
  })

  it('getNftsForOwner: every holding with its contract, metadata and balance; pageKey absent on the last page', async () => {
    const r = await alchemy.nft.getNftsForOwner(ALICE)
    expect(r.totalCount).toBe(7)
    expect(r.pageKey).toBeUndefined()
    expect(r.validAt.blockNumber).toBeGreaterThan(0)
    expect(r.ownedNfts).toHaveLength(7)
    const one = r.ownedNfts.find((n) => lower(n.contract.address) === nft && n.tokenId === '1')
    expect(one).toMatchObject({
      tokenType: NftTokenType.ERC721,
      name: 'Sailor #1',
      description: 'crew',
      balance: '1',
      image: { originalUrl: 'ipfs://QmSailor/1.png', cachedUrl: `${fx.meta}/ipfs/QmSailor/1.png` },
      raw: { metadata: { name: 'Sailor #1' } },
      contract: { name: 'Sailors', symbol: 'SAIL', tokenType: NftTokenType.ERC721, totalSupply: '6' },
    })
    expect(one?.contract.spamClassifications).toEqual([])
    // Checksummed, as Alchemy answers.
    expect(one?.contract.address).not.toBe(nft)
    const thing = r.ownedNfts.find((n) => lower(n.contract.address) === items && n.tokenId === '8')
    expect(thing).toMatchObject({
      tokenType: NftTokenType.ERC1155,
      balance: '6',
      contract: { name: 'Things' },
    })
    expect(thing?.name).toBe(`Thing ${'0'.repeat(63)}8`)

    // Halyard classifies nothing as spam: excluding it removes nothing, asking for only spam finds none.
    expect((await alchemy.nft.getNftsForOwner(ALICE, { excludeFilters: [NftFilters.SPAM] })).totalCount).toBe(
      7,
    )
    expect(
      (await alchemy.nft.getNftsForOwner(ALICE, { includeFilters: [NftFilters.SPAM] })).ownedNfts,
    ).toEqual([])
    const only = await alchemy.nft.getNftsForOwner(ALICE, { contractAddresses: [items] })
    expect(only.ownedNfts.map((n) => [n.tokenId, n.balance])).toEqual([
      ['7', '5'],
      ['8', '6'],
    ])
    const bare = await alchemy.nft.getNftsForOwner(ALICE, { omitMetadata: true, contractAddresses: [nft] })
    expect(bare.ownedNfts[0]).toEqual({ contractAddress: expect.any(String), tokenId: '1', balance: '1' })
    expect(lower(bare.ownedNfts[0]!.contractAddress)).toBe(nft)
  })

  it('getNftsForOwner walks pageSize pages by pageKey without duplicates; the iterator ends', async () => {
    const seen: string[] = []
    let pageKey: string | undefined
    let pages = 0
    do {
      const r = await alchemy.nft.getNftsForOwner(ALICE, { pageSize: 2, ...(pageKey ? { pageKey } : {}) })
      seen.push(...r.ownedNfts.map((n) => `${lower(n.contract.address)}:${n.tokenId}`))
      pageKey = r.pageKey
      pages++
    } while (pageKey && pages < 10)
    expect(pages).toBe(4)
    expect(new Set(seen).size).toBe(7)
    expect(seen).toHaveLength(7)

    // More than one page of 100 (the iterator's page size): it ends after the last.
    const ids: string[] = []
    for await (const n of alchemy.nft.getNftsForOwnerIterator(CAROL)) ids.push(n.tokenId)
    expect(ids).toHaveLength(RANGE)
    expect(new Set(ids).size).toBe(RANGE)
  })

  it('getNftMetadata: decimal or hex token id, refreshCache, and 404 for a token that does not exist', async () => {
    const m = await alchemy.nft.getNftMetadata(nft, 2)
    expect(m).toMatchObject({
      tokenId: '2',
      tokenType: NftTokenType.ERC721,
      name: 'Sailor #2',
      tokenUri: expect.stringMatching(/^data:application\/json;base64,/),
      contract: { address: expect.any(String), name: 'Sailors', spamClassifications: [] },
    })
    expect(Date.parse(m.timeLastUpdated)).toBeGreaterThan(0)
    const hex = await call(`getNFTMetadata?contractAddress=${nft}&tokenId=0x2&tokenType=erc721`)
    expect(hex.status).toBe(200)
    expect(hex.body).toMatchObject({ tokenId: '2', name: 'Sailor #2' })
    // A second refresh within the interval serves the cached copy instead of a 429.
    for (let i = 0; i < 2; i++)
      expect((await alchemy.nft.getNftMetadata(nft, 3, { refreshCache: true })).name).toBe('Sailor #3')
    const erc1155 = await alchemy.nft.getNftMetadata(items, 7, { tokenType: NftTokenType.ERC1155 })
    expect(erc1155).toMatchObject({ tokenType: NftTokenType.ERC1155, name: `Thing ${'0'.repeat(63)}7` })
    await expect(alchemy.nft.getNftMetadata(nft, 99)).rejects.toThrow(/^404: .*token 99 .* does not exist/)
  })

  it('getNftMetadataBatch answers every entry; one it cannot find says why', async () => {
    const r = await alchemy.nft.getNftMetadataBatch([
      { contractAddress: nft, tokenId: 1 },
      { contractAddress: items, tokenId: '8', tokenType: NftTokenType.ERC1155 },
      { contractAddress: nft, tokenId: 99 },
      { contractAddress: ALICE, tokenId: 1 },
    ])
    expect(r.nfts.map((n) => n.name)).toEqual(['Sailor #1', `Thing ${'0'.repeat(63)}8`, undefined, undefined])
    expect(r.nfts[2]?.raw.error).toMatch(/does not exist/)
    expect(r.nfts[3]?.contract.tokenType).toBe(NftTokenType.NOT_A_CONTRACT)
    const get = await call(`getNFTMetadataBatch?tokens=x`)
    expect(get.status).toBe(400)
    expect(get.body.error?.message).toMatch(/getNFTMetadataBatch takes a POST/)
  })

  it('getContractMetadata and getContractMetadataBatch', async () => {
    const c = await alchemy.nft.getContractMetadata(nft)
    expect(c).toMatchObject({
      name: 'Sailors',
      symbol: 'SAIL',
      tokenType: NftTokenType.ERC721,
      totalSupply: '6',
    })
    expect(lower(c.address)).toBe(nft)
    const b = await alchemy.nft.getContractMetadataBatch([nft, items, erc20, ALICE])
    expect(b.contracts.map((x) => x.tokenType)).toEqual([
      NftTokenType.ERC721,
      NftTokenType.ERC1155,
      NftTokenType.NO_SUPPORTED_NFT_STANDARD,
      NftTokenType.NOT_A_CONTRACT,
    ])
    expect(b.contracts[1]).toMatchObject({ name: 'Things', symbol: 'THG', totalSupply: '2' })
    await expect(alchemy.nft.getContractMetadata(erc20)).rejects.toThrow(/^404: .*not an ERC-721 or ERC-1155/)
  })

  it('getNftsForContract pages by pageKey and startToken; the iterator ends', async () => {
    const first = await alchemy.nft.getNftsForContract(nft, { pageSize: 4 })
    expect(first.nfts.map((n) => n.tokenId)).toEqual(['1', '2', '3', '4'])
    expect(first.nfts[0]).toMatchObject({ name: 'Sailor #1', contract: { name: 'Sailors' } })
    const second = await alchemy.nft.getNftsForContract(nft, {
      pageSize: 4,
      pageKey: first.pageKey as string,
    })
    expect(second.nfts.map((n) => n.tokenId)).toEqual(['5', '6'])
    expect(second.pageKey).toBeUndefined()
    const bare = await alchemy.nft.getNftsForContract(items, { omitMetadata: true })
    expect(bare.nfts).toEqual([
      { contractAddress: items, tokenId: '7' },
      { contractAddress: items, tokenId: '8' },
    ])
    const start = await call(`getNFTsForContract?contractAddress=${nft}&startToken=0x5&withMetadata=false`)
    expect(start.body).toMatchObject({ nfts: [{ tokenId: '5' }, { tokenId: '6' }], pageKey: null })
    const ids: string[] = []
    for await (const n of alchemy.nft.getNftsForContractIterator(range)) ids.push(n.tokenId)
    expect(ids).toEqual(Array.from({ length: RANGE }, (_, i) => String(i + 1)))
  })

  it('getOwnersForNft and getOwnersForContract (withTokenBalances, includeCount)', async () => {
    expect(await alchemy.nft.getOwnersForNft(nft, 1)).toEqual({ owners: [ALICE], pageKey: null })
    // Address order: BOB (0x…0b0b) before ALICE (0x…a11ce).
    expect((await alchemy.nft.getOwnersForNft(items, 7)).owners).toEqual([BOB, ALICE])
    expect((await alchemy.nft.getOwnersForNft(nft, 99)).owners).toEqual([])
    const paged = await call(`getOwnersForNFT?contractAddress=${items}&tokenId=7&pageSize=1`)
    expect(paged.body).toMatchObject({ owners: [BOB], pageKey: expect.any(String) })
    const rest = await call(
      `getOwnersForNFT?contractAddress=${items}&tokenId=7&pageSize=1&pageKey=${paged.body.pageKey}`,
    )
    expect(rest.body).toEqual({ owners: [ALICE], pageKey: null })

    const owners = await alchemy.nft.getOwnersForContract(nft)
    expect(owners).toEqual({ owners: [BOB, ALICE] })
    const withBalances = await alchemy.nft.getOwnersForContract(items, { withTokenBalances: true })
    expect(withBalances.owners).toEqual([
      { ownerAddress: BOB, tokenBalances: [{ tokenId: '7', balance: '2' }] },
      {
        ownerAddress: ALICE,
        tokenBalances: [
          { tokenId: '7', balance: '5' },
          { tokenId: '8', balance: '6' },
        ],
      },
    ])
    const counted = await call(`getOwnersForContract?contractAddress=${range}&includeCount=true`)
    expect(counted.body).toEqual({ owners: [CAROL], totalCount: 1, pageKey: null })
  })

  it('parses the array query form key[]= (raw and encoded) and key=a&key=b, on both roots', async () => {
    const v3 = `${fx.h.baseUrl}/alchemy/ethereum-devnet/nft/v3/${fx.key}`
    for (const q of [
      `contractAddresses[]=${nft}&contractAddresses[]=${items}`,
      `contractAddresses%5B%5D=${nft}&contractAddresses%5B%5D=${items}`,
      `contractAddresses=${nft}&contractAddresses=${items}`,
      `contractAddresses[]=${nft}&contractAddresses=${items}`,
    ]) {
      for (const base of [root, v3]) {
        const res = await fetch(`${base}/getNFTsForOwner?owner=${ALICE}&withMetadata=false&${q}`)
        const body = (await res.json()) as { ownedNfts: unknown[]; totalCount: number }
        expect(res.status, q).toBe(200)
        expect(body.totalCount, q).toBe(7)
      }
    }
    // A url configured with a trailing slash: the SDK sends `…/{key}//{method}`.
    const slash = new Alchemy({ url: `${root}/`, network: Network.ETH_MAINNET })
    expect((await slash.nft.getContractMetadata(nft)).name).toBe('Sailors')
    const one = await call(`getNFTsForOwner?owner=${ALICE}&withMetadata=false&contractAddresses[]=${items}`)
    expect(one.body).toMatchObject({ totalCount: 2, pageKey: null })
    // POST with the parameters in a JSON body works too.
    const post = await call('getNFTsForOwner', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ owner: BOB, withMetadata: false, contractAddresses: [nft] }),
    })
    expect(post.body).toMatchObject({ ownedNfts: [{ tokenId: '6', balance: '1' }], pageKey: null })
  })

  it('charges compute units: 10 per call, 20 for a list, 10 per batch entry', async () => {
    const key = await fx.h.createKey()
    const mine = new Alchemy({
      url: `${fx.h.baseUrl}/alchemy/eth-devnet/v2/${key}`,
      network: Network.ETH_MAINNET,
    })
    await mine.nft.getContractMetadata(nft)
    await mine.nft.getNftsForOwner(BOB)
    await mine.nft.getNftMetadataBatch([1, 2, 3].map((tokenId) => ({ contractAddress: nft, tokenId })))
    await fx.h.halyard.services.usage.flush()
    const res = await fetch(`${fx.h.baseUrl}/usage`, { headers: { 'x-api-key': key } })
    const usage = (await res.json()) as {
      methods: { method: string; requests: number; computeUnits: number }[]
    }
    const byMethod = Object.fromEntries(usage.methods.map((m) => [m.method, [m.requests, m.computeUnits]]))
    expect(byMethod).toEqual({
      'GET /v1/alchemy/:network/v2/:apiKey/:method': [2, 30],
      'POST /v1/alchemy/:network/v2/:apiKey/:method': [1, 30],
    })
  })

  it('refuses what it does not serve and what is malformed, naming it, key never repeated', async () => {
    const unknown = await call(`getNFTSales?contractAddress=${nft}`)
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toMatchObject({ code: 'not_found', status: 404 })
    expect(unknown.body.error?.message).toMatch(/"getNFTSales" is not served/)
    for (const name of ['constructor', '__proto__', 'toString'])
      expect((await call(`${name}?owner=${ALICE}`)).status, name).toBe(404)
    for (const [q, name] of [
      [`getNFTsForOwner?owner=${ALICE}&pageKey=garbage`, 'pageKey'],
      [
        `getNFTsForContract?contractAddress=${nft}&pageKey=${Buffer.from('o1.x').toString('base64url')}`,
        'pageKey',
      ],
      [`getOwnersForContract?contractAddress=${nft}&pageKey=%00`, 'pageKey'],
      [`getNFTsForOwner?owner=0x12`, 'owner'],
      [`getNFTsForOwner`, 'owner'],
      [`getNFTsForOwner?owner=${ALICE}&owner=${BOB}`, 'owner'],
      [`getNFTsForOwner?owner=${ALICE}&pageSize=101`, 'pageSize'],
      [`getNFTsForOwner?owner=${ALICE}&orderBy=transferTime`, 'orderBy'],
      [`getNFTsForOwner?owner=${ALICE}&excludeFilters[]=AIRDROPS`, 'excludeFilters'],
      [`getNFTsForOwner?owner=${ALICE}&withMetadata=yes`, 'withMetadata'],
      [`getNFTMetadata?contractAddress=${nft}&tokenId=-1`, 'tokenId'],
      [`getNFTMetadata?contractAddress=${nft}&tokenId=1&tokenType=ERC20`, 'tokenType'],
      [`getOwnersForContract?contractAddress=${nft}&block=123`, 'block'],
    ] as const) {
      const r = await call(q)
      expect(r.status, q).toBe(400)
      expect(r.body.error?.message, q).toMatch(new RegExp(`^${name} `))
    }
    await expect(alchemy.nft.getNftsForOwner(ALICE, { pageKey: 'nope' })).rejects.toThrow(/^400: .*pageKey/)
    const wrong = await fetch(
      `${fx.h.baseUrl}/alchemy/eth-devnet/v2/hal_test_wrong/getNFTsForOwner?owner=${ALICE}`,
    )
    const text = await wrong.text()
    expect(wrong.status).toBe(401)
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'unauthorized', status: 401 } })
    expect(text).not.toContain('hal_test_wrong')
    const bad = new Alchemy({
      url: `${fx.h.baseUrl}/alchemy/eth-devnet/v2/hal_test_wrong`,
      network: Network.ETH_MAINNET,
    })
    await expect(bad.nft.getContractMetadata(nft)).rejects.toThrow(/^401: /)
    const nowhere = await fetch(
      `${fx.h.baseUrl}/alchemy/eth-nowhere/nft/v3/${fx.key}/getNFTsForOwner?owner=${ALICE}`,
    )
    expect(nowhere.status).toBe(404)
    expect(unknown.text + (await nowhere.text())).not.toContain(fx.key)
  })
})
