import { stringToHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { ensureMulticall3 } from '../devnet/multicall3.ts'
import type { Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'
import type { TokenBalanceList, TokenMetadata } from './service.ts'

const HOLDER = '0x000000000000000000000000000000000000a11c' as Address
const OTHER = '0x000000000000000000000000000000000000b0b0' as Address
const NATIVE = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'

describeEachStorage('token API on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let usd: Address
  let gold: Address
  let maker: Address
  let gone: Address

  const get = async (path: string) => {
    const res = await fetch(`${h.baseUrl}${path}`, { headers: { 'x-api-key': key } })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const balances = async (addr: string, q = '') =>
    (await get(`/tokens/ethereum-devnet/balances/${addr}${q}`)) as {
      status: number
      body: TokenBalanceList & Record<string, unknown>
    }
  const synced = async () => {
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    await ensureMulticall3(anvil.url)
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    gold = await dev.deploy('DemoERC20', ['Gold', 'DGLD', 18])
    maker = await dev.deploy('Bytes32Token', [
      stringToHex('Maker', { size: 32 }),
      stringToHex('MKR', { size: 32 }),
    ])
    gone = await dev.deploy('DemoERC20', ['Gone', 'GONE', 18])
    h = await startTestHalyard({
      networks: [
        anvilNetwork(anvil, {
          data: { prices: { source: 'static', prices: { [usd]: '0.999', native: '3000.5' } } },
        }),
      ],
      storage,
    })
    key = await h.createKey()
    await dev.send('DemoERC20', usd, 'mint', [HOLDER, 1_234_567_891n])
    await dev.send('DemoERC20', gold, 'mint', [HOLDER, 10n ** 18n + 1n])
    await dev.send('Bytes32Token', maker, 'mint', [DEV_ACCOUNT, 5n * 10n ** 17n])
    await dev.send('DemoERC20', gone, 'mint', [DEV_ACCOUNT, 7n])
    // DEV_ACCOUNT sends all of GONE away: touched, but no balance now → not listed.
    await dev.send('DemoERC20', gone, 'transfer', [OTHER, 7n])
    await dev.rpc('anvil_setBalance', [HOLDER, '0x1bc16d674ec80001'])
    await synced()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('lists the native balance first, then every touched ERC-20 with its balanceOf, exactly', async () => {
    const { status, body } = await balances(HOLDER)
    expect(status).toBe(200)
    expect(body).toMatchObject({ address: HOLDER, chain: 'ethereum-devnet', page: 1, total: 3 })
    expect(body.tokens[0]).toEqual({
      contract: NATIVE,
      symbol: 'ETH',
      name: 'Ether',
      decimals: 18,
      balance: '2000000000000000001',
      formatted_balance: '2.000000000000000001',
      usd_value: '6001.0000000000000030005',
      logo_url: null,
    })
    for (const t of body.tokens.slice(1)) {
      const direct = await dev.read<bigint>('DemoERC20', t.contract, 'balanceOf', [HOLDER])
      expect(t.balance).toBe(direct.toString())
    }
    expect(body.tokens.slice(1)).toEqual([
      {
        contract: usd,
        symbol: 'DUSD',
        name: 'Dollar',
        decimals: 6,
        balance: '1234567891',
        formatted_balance: '1234.567891',
        usd_value: '1233.333323109',
        logo_url: null,
      },
      {
        contract: gold,
        symbol: 'DGLD',
        name: 'Gold',
        decimals: 18,
        balance: '1000000000000000001',
        formatted_balance: '1.000000000000000001',
        // No price for this token: null, never "0".
        usd_value: null,
        logo_url: null,
      },
    ])
  })

  it('reads bytes32 names and leaves out tokens whose balance is now zero', async () => {
    const { body } = await balances(DEV_ACCOUNT.toUpperCase().replace('0X', '0x'))
    const contracts = body.tokens.map((t) => t.contract)
    expect(contracts[0]).toBe(NATIVE)
    expect(contracts).toContain(maker)
    expect(contracts).not.toContain(gone)
    const mkr = body.tokens.find((t) => t.contract === maker)
    expect(mkr).toMatchObject({ name: 'Maker', symbol: 'MKR', decimals: 18, formatted_balance: '0.5' })
  })

  it('shows a mined transfer once its block is indexed, and the balance follows later transfers', async () => {
    await dev.send('DemoERC20', gold, 'mint', [OTHER, 3n])
    await synced()
    const { body } = await balances(OTHER)
    expect(body.tokens.find((t) => t.contract === gold)?.balance).toBe('3')
    // Balances are reused within a block; the next indexed block must not see the old ones.
    await dev.send('DemoERC20', gold, 'mint', [OTHER, 4n])
    await synced()
    const again = await balances(OTHER)
    expect(again.body.tokens.find((t) => t.contract === gold)?.balance).toBe('7')
  })

  it('shows a transfer within one block interval of it being mined (interval mining, 2 s blocks)', async () => {
    const fresh = '0x000000000000000000000000000000000000f00d' as Address
    await dev.rpc('evm_setIntervalMining', [2])
    try {
      const hash = await dev.send('DemoERC20', gold, 'mint', [fresh, 42n], { wait: false })
      const receipt = await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
      let visible = false
      // Visible before the chain moves on by one more block: within one block interval.
      while (BigInt(await dev.rpc<string>('eth_blockNumber')) <= receipt.blockNumber) {
        const { body } = await balances(fresh)
        if (body.tokens.some((t) => t.contract === gold && t.balance === '42')) {
          visible = true
          break
        }
        await new Promise((r) => setTimeout(r, 25))
      }
      expect(visible).toBe(true)
    } finally {
      await dev.rpc('evm_setIntervalMining', [0])
      await dev.rpc('evm_setAutomine', [true])
    }
  })

  it('paginates: page past the end is empty, bad page/limit/address are 400s naming the parameter', async () => {
    const p2 = await balances(HOLDER, '?page=2&limit=2')
    expect(p2.status).toBe(200)
    expect(p2.body).toMatchObject({ page: 2, total: 3 })
    expect(p2.body.tokens.map((t) => t.contract)).toEqual([gold])
    const past = await balances(HOLDER, '?page=9')
    expect(past.status).toBe(200)
    expect(past.body).toMatchObject({ tokens: [], page: 9, total: 3 })
    for (const [q, name] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=abc', 'limit'],
      ['?limit=1.5', 'limit'],
      ['?page=0', 'page'],
      ['?page=-1', 'page'],
      ['?page=x', 'page'],
      ['?page=1&page=2', 'page'],
    ] as const) {
      const r = await balances(HOLDER, q)
      expect(r.status, q).toBe(400)
      expect((r.body.error as { code: string; message: string }).code).toBe('invalid_request')
      expect((r.body.error as { message: string }).message, q).toMatch(new RegExp(`^${name} `))
    }
    expect((await balances(HOLDER, '?limit=100')).status).toBe(200)
    // The message names the real bound, not only the lower one.
    expect((await balances(HOLDER, '?page=9999999')).body.error).toMatchObject({
      message: 'page must be an integer between 1 and 1000000 (got 9999999)',
    })
    const bad = await balances('0x1234')
    expect(bad.status).toBe(400)
    expect((bad.body.error as { message: string }).message).toMatch(/^address /)
    // Mixed case is an EIP-55 checksum: checksummed passes, a mistyped one is a 400 saying so.
    const checksummed = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
    expect((await balances(checksummed)).status).toBe(200)
    const typo = await balances(checksummed.replace('0xf39F', '0xf39f'))
    expect(typo.status).toBe(400)
    expect((typo.body.error as { message: string }).message).toMatch(/^address has a wrong EIP-55 checksum/)
    const unknown = await get(`/tokens/nochain/balances/${HOLDER}`)
    expect(unknown.status).toBe(404)
  })

  it('answers token metadata with supply, price and market cap; bytes32 names; 404 for a non-contract', async () => {
    const m = await get(`/tokens/ethereum-devnet/metadata/${usd}`)
    expect(m.status).toBe(200)
    expect(m.body as unknown as TokenMetadata).toEqual({
      contract: usd,
      chain: 'ethereum-devnet',
      name: 'Dollar',
      symbol: 'DUSD',
      decimals: 6,
      total_supply: '1234567891',
      formatted_total_supply: '1234.567891',
      price_usd: '0.999',
      market_cap_usd: '1233.333323109',
      logo_url: null,
    })
    const mkr = await get(`/tokens/ethereum-devnet/metadata/${maker}`)
    expect(mkr.body).toMatchObject({
      name: 'Maker',
      symbol: 'MKR',
      decimals: 18,
      price_usd: null,
      market_cap_usd: null,
    })
    const eoa = await get(`/tokens/ethereum-devnet/metadata/${HOLDER}`)
    expect(eoa.status).toBe(404)
    expect((eoa.body.error as { code: string }).code).toBe('not_found')
    const bad = await get('/tokens/ethereum-devnet/metadata/0xzz')
    expect(bad.status).toBe(400)
    expect((bad.body.error as { message: string }).message).toMatch(/^contract /)
  })
})
