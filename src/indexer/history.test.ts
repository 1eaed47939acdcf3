import { afterAll, beforeAll, expect, it } from 'vitest'
import { type HistoryRelay, startHistoryRelay } from '../../test/fixtures/indexer/history-relay.ts'
import { nftBalanceRows } from '../../test/fixtures/indexer/rows.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { COOKIE } from '../dashboard/web.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { openScan, readScan } from './history-store.ts'
import type { IndexCoverage } from './index-coverage.ts'

const HOLDER = '0x00000000000000000000000000000000000a11ce' as Address
const OTHER = '0x0000000000000000000000000000000000000b0b' as Address
const SLUG = 'ethereum-devnet'
/** The relay refuses scan windows wider than this: the scans must halve down to it. */
const MAX_SPAN = 4

interface Answer {
  status: number
  headers: Headers
  body: Record<string, unknown> & { index: IndexCoverage }
}

/**
 * Halyard started with `history: N` on a chain where an address got ERC-20s, ERC-721s and
 * ERC-1155s before N and sent some after: the first answers say partial, a targeted history
 * scan fills the index below N, and then balances, owned NFTs and transfers are complete —
 * with no negative holding left for the NFT sent after N. Real anvil behind a relay that
 * refuses wide log ranges (as hosted nodes do) and can hold the scans' calls.
 */
describeEachStorage('history below the index on $name', (backend) => {
  let anvil: AnvilProcess
  let relay: HistoryRelay
  let storage: Storage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let N: bigint
  const tokens = {} as Record<'old' | 'usd' | 'nft' | 'items', Address>
  const hashes = {} as Record<'oldMint' | 'nftOutEarly' | 'nftOutLate', Hash>

  const network = () =>
    anvilNetwork(anvil, {
      upstreams: [{ url: relay.url, weight: 1, archive: false }],
      indexer: {
        enabled: true,
        history: Number(N),
        maxBlockRange: 2000,
        internalTransfers: 'off',
        historyScans: { concurrency: 1, maxQueued: 10, maxQueuedPerKey: 2, window: 1000 },
      },
    })
  const get = async (path: string, apiKey = key): Promise<Answer> => {
    const res = await fetch(`${h.baseUrl}${path}`, { headers: { 'x-api-key': apiKey } })
    return { status: res.status, headers: res.headers, body: (await res.json()) as Answer['body'] }
  }
  const owned = (a: Address, k?: string) => get(`/nfts/${SLUG}/owned/${a}`, k)
  const negativeRows = async (holder: Address) =>
    (await nftBalanceRows(storage.db)).filter(
      (r) => r.network === SLUG && r.holder === holder.toLowerCase() && BigInt(r.balance) < 0n,
    ).length

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    relay = await startHistoryRelay(anvil.url, MAX_SPAN)
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    tokens.old = await dev.deploy('DemoERC20', ['Old', 'OLD', 18])
    tokens.usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    tokens.nft = await dev.deploy('DemoERC721', ['Sailors', 'SAIL'])
    tokens.items = await dev.deploy('DemoERC1155', ['data:,{}', 'Items', 'ITEM'])
    await dev.rpc('anvil_impersonateAccount', [HOLDER])
    await dev.rpc('anvil_setBalance', [HOLDER, '0xde0b6b3a7640000'])
    const holder = new Devnet(anvil.url, HOLDER)
    // Before N: received ERC-20s, two ERC-721s (one sent on before N), ERC-1155 single and batch.
    hashes.oldMint = await dev.send('DemoERC20', tokens.old, 'mint', [HOLDER, 500n])
    await dev.send('DemoERC20', tokens.usd, 'mint', [HOLDER, 1000n])
    await dev.send('DemoERC721', tokens.nft, 'mint', [HOLDER, 1n, 'data:,{}'])
    await dev.send('DemoERC721', tokens.nft, 'mint', [HOLDER, 2n, 'data:,{}'])
    hashes.nftOutEarly = await holder.send('DemoERC721', tokens.nft, 'transferFrom', [HOLDER, OTHER, 2n])
    await dev.send('DemoERC1155', tokens.items, 'mint', [HOLDER, 5n, 10n])
    await dev.send('DemoERC1155', tokens.items, 'mintBatch', [HOLDER, [6n, 7n], [1n, 2n]])
    await dev.rpc('anvil_mine', ['0x5'])
    N = BigInt(await dev.rpc<string>('eth_blockNumber')) + 1n
    // From N on (indexed): the first ERC-721 and part of the ERC-1155 go out, more ERC-20 comes in.
    hashes.nftOutLate = await holder.send('DemoERC721', tokens.nft, 'transferFrom', [HOLDER, OTHER, 1n])
    await holder.send('DemoERC1155', tokens.items, 'safeTransferFrom', [HOLDER, OTHER, 5n, 3n, '0x'])
    await dev.send('DemoERC20', tokens.usd, 'mint', [HOLDER, 1n])
    h = await startTestHalyard({ networks: [network()], storage })
    key = await h.createKey()
    await h.halyard.services.indexer.waitForBlock(SLUG, BigInt(await dev.rpc<string>('eth_blockNumber')))
  })
  afterAll(async () => {
    relay?.hold(false)
    await h?.close()
    await storage?.close()
    await relay?.close()
    await anvil?.stop()
  })

  it('answers partial first, scans below N, then answers complete with no negative holding', async () => {
    relay.hold(true) // the scan's calls wait: the first answers are surely before it ends
    const first = await owned(HOLDER)
    expect(first.status).toBe(200)
    expect(first.body.index).toMatchObject({ complete_from: Number(N), partial: true })
    expect(['queued', 'running']).toContain(first.body.index.history_scan)
    expect(first.headers.get('halyard-index-complete-from')).toBe(N.toString())
    expect(first.headers.get('halyard-index-partial')).toBe('true')
    // Only what moved from N on is known: the sent NFT leaves a negative delta, never shown.
    expect((first.body.nfts as unknown[]).length).toBe(0)
    expect(await negativeRows(HOLDER)).toBeGreaterThan(0)
    const balances = await get(`/tokens/${SLUG}/balances/${HOLDER}`)
    expect(balances.body.index.partial).toBe(true)
    expect((balances.body.tokens as { contract: string }[]).map((t) => t.contract)).not.toContain(tokens.old)

    relay.hold(false)
    await until(
      'the history scan of HOLDER is done',
      async () => (await readScan(storage.db, SLUG, HOLDER))?.done,
    )

    const after = await owned(HOLDER)
    expect(after.body.index).toMatchObject({ complete_from: 0, partial: false, history_scan: 'done' })
    expect(after.headers.get('halyard-index-partial')).toBe('false')
    const held = (after.body.nfts as { contract: string; token_id: string; balance: string }[])
      .map((n) => `${n.contract === tokens.items ? 'items' : 'nft'}:${n.token_id}:${n.balance}`)
      .sort()
    expect(held).toEqual(['items:5:7', 'items:6:1', 'items:7:2'])
    expect(await negativeRows(HOLDER)).toBe(0)

    const bal = await get(`/tokens/${SLUG}/balances/${HOLDER}`)
    expect(bal.body.index.partial).toBe(false)
    const amounts = Object.fromEntries(
      (bal.body.tokens as { contract: string; balance: string }[]).map((t) => [t.contract, t.balance]),
    )
    // (the native balance is listed too, under the 0xeeee… placeholder)
    expect(amounts).toMatchObject({ [tokens.old]: '500', [tokens.usd]: '1001' })

    const tokenTransfers = await get(`/transfers/${SLUG}/${HOLDER}?category=erc20,erc721,erc1155`)
    expect(tokenTransfers.body.index).toMatchObject({ complete_from: 0, partial: false })
    const txs = (tokenTransfers.body.transfers as { tx_hash: string }[]).map((t) => t.tx_hash)
    expect(txs).toEqual(expect.arrayContaining([hashes.oldMint, hashes.nftOutEarly, hashes.nftOutLate]))
    // 3 ERC-20 in, 2 ERC-721 in and 2 out, ERC-1155: one single in, a batch of two, one out.
    expect(txs.length).toBe(3 + 4 + 4)
    // With native transfers the answer is complete from N only: a log scan cannot find those.
    const all = await get(`/transfers/${SLUG}/${HOLDER}`)
    expect(all.body.index).toMatchObject({ complete_from: Number(N), partial: true, history_scan: 'done' })
    // The Alchemy-compatible owner listing has no room for a field: the headers say it.
    const alchemy = await fetch(
      `${h.baseUrl}/alchemy/${SLUG}/nft/v3/${key}/getNFTsForOwner?owner=${HOLDER}&withMetadata=false`,
    )
    expect(alchemy.status).toBe(200)
    expect(alchemy.headers.get('halyard-index-complete-from')).toBe('0')
    expect(alchemy.headers.get('halyard-index-partial')).toBe('false')
    // Operators see it too: a /ready line and gauges per network.
    const ready = (await (await fetch(`${h.halyard.origin}/ready`)).json()) as {
      checks: Record<string, string>
    }
    expect(ready.checks['history ethereum/devnet']).toMatch(
      new RegExp(`^complete from block ${N}, indexed to block \\d+; address history scans: 1 done`),
    )
    const metrics = await (await fetch(`${h.halyard.origin}/metrics`)).text()
    expect(metrics).toContain(`halyard_indexer_complete_from_block{network="${SLUG}"} ${N}`)
    expect(metrics).toMatch(new RegExp(`halyard_indexer_indexed_block\\{network="${SLUG}"\\} \\d+`))
    // The scan's windows were halved down to what the node serves, never past it.
    expect(relay.spans.some((s) => s.refused)).toBe(true)
    expect(relay.spans.filter((s) => !s.refused).every((s) => s.span <= MAX_SPAN)).toBe(true)
  })

  it('dedupes an address asked twice and refuses beyond an account share, saying so', async () => {
    const mine = await h.createKey()
    const theirs = await h.createKey()
    const a = '0x00000000000000000000000000000000000000a1' as Address
    const b = '0x00000000000000000000000000000000000000b2' as Address
    const c = '0x00000000000000000000000000000000000000c3' as Address
    const d = '0x00000000000000000000000000000000000000d4' as Address
    relay.hold(true)
    expect((await owned(a, mine)).body.index.history_scan).toBe('queued')
    expect((await owned(b, mine)).body.index.history_scan).toBe('queued')
    // The account has two scans waiting or running (its share): a third is refused, not queued.
    const refused = await owned(c, mine)
    expect(refused.status).toBe(200)
    expect(refused.body.index).toMatchObject({ partial: true, history_scan: 'refused' })
    expect(refused.headers.get('halyard-history-scan')).toBe('refused')
    expect(await readScan(storage.db, SLUG, c)).toBeNull()
    // Another account still gets its own; the same address again joins the scan under way.
    expect((await owned(d, theirs)).body.index.history_scan).toBe('queued')
    expect((await owned(a, theirs)).body.index.history_scan).toBe('running')
    relay.hold(false)
    for (const x of [a, b, d])
      await until(`the scan of ${x}`, async () => (await readScan(storage.db, SLUG, x))?.done)
    expect((await owned(c, mine)).body.index.history_scan).toBe('queued')
  })

  it('keeps finished scans across a restart and resumes an unfinished one', async () => {
    await h.close()
    // OTHER's scan was left unfinished by the previous run (as if it stopped mid-scan).
    await openScan(storage.db, SLUG, OTHER, N, 'test')
    h = await startTestHalyard({ networks: [network()], storage })
    key = await h.createKey()
    const again = await owned(HOLDER)
    expect(again.body.index).toMatchObject({ complete_from: 0, partial: false, history_scan: 'done' })
    await until('the resumed scan of OTHER', async () => (await readScan(storage.db, SLUG, OTHER))?.done)
    const other = await owned(OTHER)
    expect(other.body.index.partial).toBe(false)
    const ids = (other.body.nfts as { contract: string; token_id: string }[])
      .filter((n) => n.contract === tokens.nft)
      .map((n) => n.token_id)
      .sort()
    expect(ids).toEqual(['1', '2'])
    expect(await negativeRows(OTHER)).toBe(0)
    // The dashboard's networks table shows the same: complete from N, indexed to the cursor.
    const email = `d-${Date.now()}@test.local`
    await h.createKey({ email })
    const account = await h.halyard.ctx.auth.accountByEmail(email)
    const link = await h.halyard.services.dashboard.createLink(account.id, h.halyard.origin)
    const session = await h.halyard.services.dashboard.signIn(
      new URL(link).searchParams.get('token') ?? '',
      {},
    )
    const page = await fetch(`${h.halyard.origin}/dashboard`, {
      headers: { cookie: `${COOKIE}=${session?.token}` },
    })
    expect(page.status).toBe(200)
    const cursor = (await h.halyard.services.indexer.cursor(SLUG))?.number
    expect(await page.text()).toMatch(new RegExp(`<td>${SLUG}</td>.*<td>${N}</td><td>\\d+</td></tr>`))
    expect(cursor).toBeDefined()
  })
})
