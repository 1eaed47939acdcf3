import { expect, it } from 'vitest'
import { ALICE, BOB, CID, dataJson, nftsFixture } from '../../test/fixtures/nfts/nfts-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import type { Address } from '../types.ts'
import type { NftCollection, OwnedNftList } from './service.ts'

describeEachStorage('NFT API on $name', (backend) => {
  const fx = nftsFixture(backend)
  const { docs, get, nftMeta, served, synced } = fx

  it('resolves ipfs://, ar://, base64 and plain data: URIs; owner and traits as strings', async () => {
    const { dev, meta } = fx
    const nft = await dev.deploy('DemoERC721', ['Sailors', 'SAIL'])
    docs.set(`/ipfs/${CID}/1.json`, {
      name: 'Sailor #1',
      description: 'first',
      image: `ipfs://${CID}/1.png`,
      attributes: [
        { trait_type: 'rank', value: 3 },
        { trait_type: 'captain', value: false },
        { trait_type: 'ship', value: 'Halyard' },
      ],
    })
    docs.set('/ar/arTx2', { name: 'Sailor #2', image: 'ar://arImg2' })
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 1n, `ipfs://${CID}/1.json`])
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 2n, 'ar://arTx2'])
    await dev.send('DemoERC721', nft, 'mint', [
      BOB,
      3n,
      dataJson({ name: 'Sailor #3', image: 'https://img.example/3.png' }),
    ])
    await dev.send('DemoERC721', nft, 'mint', [BOB, 4n, 'data:application/json,{"name":"Sailor%20%234"}'])

    const one = await nftMeta(nft, 1n)
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({
      contract: nft,
      token_id: '1',
      name: 'Sailor #1',
      description: 'first',
      image_url: `ipfs://${CID}/1.png`,
      image_gateway_url: `${meta}/ipfs/${CID}/1.png`,
      standard: 'ERC721',
      owner: ALICE,
      traits: [
        { trait_type: 'rank', value: '3' },
        { trait_type: 'captain', value: 'false' },
        { trait_type: 'ship', value: 'Halyard' },
      ],
      token_uri: `ipfs://${CID}/1.json`,
      metadata_error: null,
    })
    expect((await nftMeta(nft, 2n)).body).toMatchObject({
      name: 'Sailor #2',
      image_url: 'ar://arImg2',
      image_gateway_url: `${meta}/ar/arImg2`,
    })
    expect((await nftMeta(nft, 3n)).body).toMatchObject({
      name: 'Sailor #3',
      owner: BOB,
      image_gateway_url: 'https://img.example/3.png',
    })
    expect((await nftMeta(nft, '0x4')).body).toMatchObject({ token_id: '4', name: 'Sailor #4', traits: [] })
    // Cached: a second read does not fetch again.
    const before = served().length
    expect((await nftMeta(nft, 1n)).body.name).toBe('Sailor #1')
    expect(served().length).toBe(before)
  })

  it('substitutes ERC-1155 {id} as 64 lowercase hex digits (URI and JSON values)', async () => {
    const { dev, meta } = fx
    const items = await dev.deploy('DemoERC1155', [`${meta}/items/{id}.json`, 'Items', 'ITM'])
    const hexId = `${'0'.repeat(62)}1a`
    docs.set(`/items/${hexId}.json`, { name: 'Item {id}', image: `${meta}/img/{id}.png` })
    await dev.send('DemoERC1155', items, 'mint', [ALICE, 26n, 4n])
    await synced()
    const r = await nftMeta(items, 26n)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      standard: 'ERC1155',
      owner: null,
      token_uri: `${meta}/items/${hexId}.json`,
      name: `Item ${hexId}`,
      image_gateway_url: `${meta}/img/${hexId}.png`,
    })
    // Never minted: 404 (the index knows this contract and no holder of id 27).
    expect((await nftMeta(items, 27n)).status).toBe(404)
  })

  it('answers a broken token URI with 200, the on-chain fields and null metadata, never a 500', async () => {
    const { dev, meta } = fx
    const nft = await dev.deploy('DemoERC721', ['Broken', 'BRK'])
    const cases: [bigint, string, RegExp][] = [
      [1n, `${meta}/missing.json`, /^metadata server answered HTTP 404$/],
      [2n, `${meta}/slow.json`, /^no response within 700 ms$/],
      [3n, `${meta}/big.json`, /^metadata larger than 1048576 bytes$/],
      [4n, `${meta}/redirect-private`, /^metadata URL refused/],
      [5n, 'data:application/json;base64,!!!', /not valid base64/],
      [6n, '', /^the contract returned no token URI$/],
      [7n, 'gopher://old.example/x', /gopher/],
    ]
    for (const [id, uri] of cases) await dev.send('DemoERC721', nft, 'mint', [ALICE, id, uri])
    for (const [id, uri, why] of cases) {
      const r = await nftMeta(nft, id)
      expect(r.status, uri).toBe(200)
      expect(r.body, uri).toMatchObject({
        // An empty URI is no URI.
        token_uri: uri === '' ? null : uri,
        owner: ALICE,
        name: null,
        metadata: null,
        traits: [],
      })
      expect(r.body.metadata_error, uri).toMatch(why)
    }
  })

  it('refuses a metadata URI on a loopback host in production mode', async () => {
    const { dev, meta, prod } = fx
    const nft = await dev.deploy('DemoERC721', ['Local', 'LOC'])
    docs.set('/local.json', { name: 'reachable in dev mode only' })
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 1n, `${meta}/local.json`])
    const r = await nftMeta(nft, 1n, '', prod)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ name: null, metadata: null })
    expect(r.body.metadata_error).toMatch(/^metadata URL refused: .*loopback/)
    expect(served()).not.toContain('/local.json')
  })

  it('404s what does not exist and 400s what is malformed, naming the parameter', async () => {
    const { dev } = fx
    const nft = await dev.deploy('DemoERC721', ['E', 'E'])
    const erc20 = await dev.deploy('DemoERC20', ['T', 'T', 18])
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 1n, ''])
    await dev.send('DemoERC721', nft, 'burn', [1n])
    for (const [c, id, msg] of [
      [nft, 1n, /token 1 .* does not exist/],
      [nft, 99n, /does not exist/],
      [ALICE, 1n, /is not a contract/],
      [erc20, 1n, /not an ERC-721 or ERC-1155/],
    ] as const) {
      const r = await nftMeta(c, id)
      expect(r.status).toBe(404)
      expect(r.body.error?.message).toMatch(msg)
    }
    for (const [path, name] of [
      [`/nfts/ethereum-devnet/metadata/${nft}/abc`, 'token_id'],
      [`/nfts/ethereum-devnet/metadata/${nft}/-1`, 'token_id'],
      [`/nfts/ethereum-devnet/metadata/${nft}/${2n ** 256n}`, 'token_id'],
      [`/nfts/ethereum-devnet/metadata/0x12/1`, 'contract'],
      [`/nfts/ethereum-devnet/metadata/${nft}/1?refresh=yes`, 'refresh'],
      [`/nfts/ethereum-devnet/collection/nope`, 'contract'],
      [`/nfts/ethereum-devnet/owned/0xabc`, 'address'],
    ] as const) {
      const r = await get(path)
      expect(r.status, path).toBe(400)
      expect(r.body.error?.message, path).toMatch(new RegExp(`^${name} `))
    }
    expect((await get(`/nfts/nochain/collection/${nft}`)).status).toBe(404)
  })

  it('refetches when the on-chain URI changes; ?refresh=true refetches, at most once a minute per token', async () => {
    const { dev, meta } = fx
    const nft = await dev.deploy('DemoERC721', ['Fresh', 'FRSH'])
    docs.set('/v1.json', { name: 'v1' })
    docs.set('/v2.json', { name: 'v2' })
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 1n, `${meta}/v1.json`])
    expect((await nftMeta(nft, 1n)).body.name).toBe('v1')
    await dev.send('DemoERC721', nft, 'setTokenURI', [1n, `${meta}/v2.json`])
    expect((await nftMeta(nft, 1n)).body.name).toBe('v2')
    docs.set('/v2.json', { name: 'v2 edited' })
    expect((await nftMeta(nft, 1n)).body.name).toBe('v2') // cached
    expect((await nftMeta(nft, 1n, '?refresh=true')).body.name).toBe('v2 edited')
    docs.set('/v2.json', { name: 'v2 again' })
    const limited = await nftMeta(nft, 1n, '?refresh=true')
    expect(limited.status).toBe(429)
    expect(limited.body.error?.message).toMatch(/once per 60 s/)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect((await nftMeta(nft, 1n)).body.name).toBe('v2 edited')
  })

  it('detects an ERC-721 without ERC-165 (fallbacks) and reads its collection', async () => {
    const { dev } = fx
    const legacy = await dev.deploy('LegacyERC721', ['Old Punks', 'OLD'])
    await dev.send('LegacyERC721', legacy, 'mint', [ALICE, 5n, dataJson({ name: 'Old #5' })])
    await dev.send('LegacyERC721', legacy, 'mint', [BOB, 6n, ''])
    expect((await nftMeta(legacy, 5n)).body).toMatchObject({
      standard: 'ERC721',
      name: 'Old #5',
      owner: ALICE,
    })
    await synced()
    const c = await get<NftCollection>(`/nfts/ethereum-devnet/collection/${legacy}`)
    expect(c.body).toMatchObject({
      name: 'Old Punks',
      symbol: 'OLD',
      standard: 'ERC721',
      total_supply: 2,
      num_owners: 2,
    })
  })

  it('describes a collection: ERC-7572 contractURI, supply minted minus burned, owners from the index', async () => {
    const { dev } = fx
    const nft = await dev.deploy('DemoERC721', ['Fleet', 'FLT'])
    await dev.send('DemoERC721', nft, 'setContractURI', [
      dataJson({
        name: 'The Fleet',
        description: 'Ships',
        image: 'ipfs://QmLogo',
        banner_image: 'https://b.example/b.png',
      }),
    ])
    for (const [to, id] of [
      [ALICE, 1n],
      [ALICE, 2n],
      [BOB, 3n],
      [BOB, 4n],
    ] as const)
      await dev.send('DemoERC721', nft, 'mint', [to, id, ''])
    await dev.send('DemoERC721', nft, 'burn', [3n])
    await synced()
    const c = await get<NftCollection>(`/nfts/ethereum-devnet/collection/${nft}`)
    expect(c.status).toBe(200)
    expect(c.body).toEqual({
      contract: nft,
      chain: 'ethereum-devnet',
      name: 'Fleet',
      symbol: 'FLT',
      standard: 'ERC721',
      total_supply: 3,
      num_owners: 2,
      floor_price_eth: null,
      floor_price_usd: null,
      banner_url: 'https://b.example/b.png',
      image_url: 'ipfs://QmLogo',
      description: 'Ships',
    })
    const erc20 = await dev.deploy('DemoERC20', ['T', 'T', 18])
    expect((await get(`/nfts/ethereum-devnet/collection/${erc20}`)).status).toBe(404)
  })

  it('lists owned NFTs from the index: ERC-1155 batches per id, metadata lazily, unknown fields null', async () => {
    const { dev, meta } = fx
    const owner = '0x0000000000000000000000000000000000000a01' as Address
    const nft = await dev.deploy('DemoERC721', ['Owned', 'OWN'])
    const items = await dev.deploy('DemoERC1155', [
      'data:application/json,{"name":"Thing {id}"}',
      'Things',
      'THG',
    ])
    await dev.send('DemoERC721', nft, 'mint', [owner, 1n, dataJson({ name: 'Own #1', image: 'ipfs://QmA' })])
    await dev.send('DemoERC721', nft, 'mint', [owner, 2n, `${meta}/slow.json`])
    await dev.send('DemoERC1155', items, 'mintBatch', [DEV_ACCOUNT, [7n, 8n, 9n], [5n, 6n, 1n]])
    await dev.send('DemoERC1155', items, 'safeBatchTransferFrom', [
      DEV_ACCOUNT,
      owner,
      [7n, 8n],
      [2n, 6n],
      '0x',
    ])
    await synced()
    const list = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${owner}`)
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({ address: owner, chain: 'ethereum-devnet', page: 1, total: 4 })
    const byKey = new Map(list.body.nfts.map((n) => [`${n.contract}:${n.token_id}`, n]))
    expect(byKey.get(`${nft}:1`)).toEqual({
      contract: nft,
      token_id: '1',
      name: 'Own #1',
      collection_name: 'Owned',
      image_url: 'ipfs://QmA',
      standard: 'ERC721',
      balance: '1',
    })
    // Its metadata server never answers: listed all the same, with null fields.
    expect(byKey.get(`${nft}:2`)).toMatchObject({ name: null, image_url: null, collection_name: 'Owned' })
    expect(byKey.get(`${items}:7`)).toMatchObject({
      standard: 'ERC1155',
      balance: '2',
      collection_name: 'Things',
    })
    expect(byKey.get(`${items}:8`)).toMatchObject({ balance: '6', name: `Thing ${'0'.repeat(63)}8` })
    const devHolds = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${DEV_ACCOUNT}?limit=100`)
    const left = devHolds.body.nfts.filter((n) => n.contract === items).map((n) => [n.token_id, n.balance])
    expect(left).toEqual([
      ['7', '3'],
      ['9', '1'],
    ])

    // Pagination edges.
    const p2 = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${owner}?page=2&limit=3`)
    expect(p2.body).toMatchObject({ page: 2, total: 4 })
    expect(p2.body.nfts).toHaveLength(1)
    const past = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${owner}?page=5&limit=3`)
    expect(past.body).toMatchObject({ nfts: [], page: 5, total: 4 })
    for (const [q, name] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?page=0', 'page'],
      ['?page=one', 'page'],
    ] as const) {
      const r = await get(`/nfts/ethereum-devnet/owned/${owner}${q}`)
      expect(r.status, q).toBe(400)
      expect(r.body.error?.message, q).toMatch(new RegExp(`^${name} `))
    }
    expect((await get(`/nfts/ethereum-devnet/owned/${owner}?limit=100`)).status).toBe(200)
  })

  it('fetches missing metadata of an owned list in the background, at most `concurrency` at once', async () => {
    const { dev, server, meta } = fx
    const owner = '0x0000000000000000000000000000000000000a03' as Address
    const nft = await dev.deploy('DemoERC721', ['Hang', 'HNG'])
    for (let id = 1n; id <= 5n; id++)
      await dev.send('DemoERC721', nft, 'mint', [owner, id, `${meta}/hang/${id}.json`])
    await synced()
    const list = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${owner}`)
    expect(list.body.total).toBe(5)
    expect(list.body.nfts.every((n) => n.name === null && n.collection_name === 'Hang')).toBe(true)
    // Each fetch ends at the metadata timeout, two at a time: the fifth starts a little later,
    // later still on a loaded machine, so wait for it rather than expect it already.
    const hangs = () => served().filter((u) => u.startsWith('/hang/')).length
    for (let i = 0; i < 300 && hangs() < 5; i++) await new Promise((r) => setTimeout(r, 50))
    expect(hangs()).toBe(5)
    // Bounded at 2 by the client; the server may count one more for an instant, because it can
    // learn of an abandoned request after the next one arrived. Unbounded would show 5.
    expect(server.hangPeak()).toBeGreaterThanOrEqual(2)
    expect(server.hangPeak()).toBeLessThanOrEqual(3)
  })

  it('after anvil_reorg replaces blocks with transfers, balances, ownership and num_owners follow the new chain', async () => {
    const { dev, h } = fx
    const holder = '0x0000000000000000000000000000000000000a02' as Address
    const token = await dev.deploy('DemoERC20', ['Reorg', 'RG', 18])
    const nft = await dev.deploy('DemoERC721', ['ReorgNFT', 'RNFT'])
    await dev.send('DemoERC721', nft, 'mint', [DEV_ACCOUNT, 1n, ''])
    // The old chain's last two blocks: NFT 1 goes to holder, 50 RG are minted to holder.
    await dev.send('DemoERC721', nft, 'transferFrom', [DEV_ACCOUNT, holder, 1n])
    await dev.send('DemoERC20', token, 'mint', [holder, 50n])
    await synced()
    const collection = () => get<NftCollection>(`/nfts/ethereum-devnet/collection/${nft}`)
    const balances = async () =>
      (await get<{ tokens: { contract: string }[] }>(`/tokens/ethereum-devnet/balances/${holder}`)).body
        .tokens
    expect((await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${holder}`)).body.total).toBe(1)
    expect((await balances()).map((t) => t.contract)).toContain(token)
    expect((await collection()).body.num_owners).toBe(1)

    // The new chain replaces both blocks: NFT 1 stays with the dev account, NFT 2 is minted to BOB.
    const { encodeFunctionData } = await import('viem')
    const { demoArtifact } = await import('../devnet/demo.ts')
    const data = encodeFunctionData({
      abi: demoArtifact('DemoERC721').abi,
      functionName: 'mint',
      args: [BOB, 2n, ''],
    })
    await dev.rpc('anvil_reorg', [2, [[{ from: DEV_ACCOUNT, to: nft, data, gas: '0x100000' }, 0]]])
    const newHead = await dev.client.getBlock({ blockTag: 'latest' })
    const deadline = Date.now() + 20_000
    while ((await h.halyard.services.indexer.cursor('ethereum-devnet'))?.hash !== newHead.hash) {
      if (Date.now() > deadline) throw new Error('indexer did not follow the reorg')
      await new Promise((r) => setTimeout(r, 50))
    }
    expect((await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${holder}`)).body).toMatchObject({
      total: 0,
      nfts: [],
    })
    expect((await balances()).map((t) => t.contract)).not.toContain(token)
    expect((await nftMeta(nft, 1n)).body.owner).toBe(DEV_ACCOUNT)
    const bob = await get<OwnedNftList>(`/nfts/ethereum-devnet/owned/${BOB}?limit=100`)
    expect(bob.body.nfts.filter((n) => n.contract === nft).map((n) => n.token_id)).toEqual(['2'])
    expect((await collection()).body).toMatchObject({ num_owners: 2, total_supply: 2 })
  })
})
