import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { hexToBytes } from '../storage/bytea.ts'
import { ensureNetworkId } from '../storage/networks.ts'
import type { Address } from '../types.ts'
import { touchedContracts, touchedContractsPage } from './store.ts'

/**
 * The holder's ERC-20 contracts, page by page (alchemy_getTokenBalances "erc20"): the pages
 * together are the whole list in its order (first seen, then address), ties on the first block
 * included; a contract first seen later lands on a later page; a key that is not one of the
 * holder's contracts is 'unknown'.
 */

const NETWORK = 'ethereum-devnet'
const HOLDER = `0x${'ab'.repeat(20)}` as Address
const OTHER = `0x${'cd'.repeat(20)}` as Address
const contract = (i: number) => `0x${i.toString(16).padStart(40, '0')}` as Address

describeEachStorage('touchedContractsPage on $name', (backend) => {
  let storage: TestStorage

  beforeAll(async () => {
    storage = await backend.open()
    // Three contracts share each first block, inserted out of order.
    const net = await ensureNetworkId(storage.db, NETWORK)
    const rows = [7, 2, 9, 4, 1, 8, 3, 6, 5].map((i) => ({
      network_id: net,
      holder: hexToBytes(HOLDER),
      contract: hexToBytes(contract(i)),
      first_block: String(Math.floor((i - 1) / 3) + 10),
    }))
    rows.push({
      network_id: net,
      holder: hexToBytes(OTHER),
      contract: hexToBytes(contract(100)),
      first_block: '1',
    })
    await storage.db.insertInto('token_holders').values(rows).execute()
  })
  afterAll(async () => {
    await storage?.close()
  })

  async function walk(size: number): Promise<Address[]> {
    const out: Address[] = []
    let after: Address | undefined
    for (let pages = 0; pages < 20; pages++) {
      const page = await touchedContractsPage(storage.db, NETWORK, HOLDER, after, size)
      if (page === 'unknown') throw new Error('a key this walk returned was unknown')
      out.push(...page.contracts)
      if (!page.more) return out
      after = page.contracts.at(-1)
    }
    throw new Error('more than 20 pages')
  }

  it('walks the whole list in order, for every page size', async () => {
    const all = await touchedContracts(storage.db, NETWORK, HOLDER)
    expect(all).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map(contract))
    for (const size of [1, 2, 3, 4, 9, 10]) expect(await walk(size), `page size ${size}`).toEqual(all)
    const last = await touchedContractsPage(storage.db, NETWORK, HOLDER, contract(6), 3)
    expect(last).toEqual({ contracts: [7, 8, 9].map(contract), more: false })
  })

  it('puts a contract first seen later on a later page, and refuses a key not of the holder', async () => {
    const first = await touchedContractsPage(storage.db, NETWORK, HOLDER, undefined, 5)
    expect(first === 'unknown' ? [] : first.contracts).toEqual([1, 2, 3, 4, 5].map(contract))
    await storage.db
      .insertInto('token_holders')
      .values({
        network_id: await ensureNetworkId(storage.db, NETWORK),
        holder: hexToBytes(HOLDER),
        contract: hexToBytes(contract(0)),
        first_block: '99',
      })
      .execute()
    const rest = await touchedContractsPage(storage.db, NETWORK, HOLDER, contract(5), 5)
    expect(rest).toEqual({ contracts: [6, 7, 8, 9, 0].map(contract), more: false })
    expect(await touchedContractsPage(storage.db, NETWORK, HOLDER, contract(100), 5)).toBe('unknown')
  })
})
