import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FailoverPool } from '../chains/upstream-pool.ts'
import { formatUnits, multiplyDecimal, numberToDecimal } from '../common/decimal.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import type { Address } from '../types.ts'
import {
  CachedPriceSource,
  ChainlinkPriceSource,
  CoinGeckoPriceSource,
  type PriceSource,
  StaticPriceSource,
} from './sources.ts'
import { loadTokenLists, parseTokenList } from './token-lists.ts'

const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48' as Address
const UNKNOWN = '0x1111111111111111111111111111111111111111' as Address

describe('decimal helpers', () => {
  it('formats and multiplies exactly', () => {
    expect(formatUnits(1234567n, 6)).toBe('1.234567')
    expect(formatUnits(1000000n, 6)).toBe('1')
    expect(formatUnits(5n, 18)).toBe('0.000000000000000005')
    expect(formatUnits(0n, 18)).toBe('0')
    expect(multiplyDecimal(10n ** 30n + 1n, 18, '0.1')).toBe('100000000000.0000000000000000001')
    expect(numberToDecimal(1.5e-7)).toBe('0.00000015')
    expect(numberToDecimal(2e21)).toBe('2000000000000000000000')
    expect(numberToDecimal(3012.45)).toBe('3012.45')
  })
})

describe('CoinGecko-style price source against a local server speaking its format', () => {
  let server: Server
  let base: string
  const seen: string[] = []
  let failing = false

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '')
      if (failing) {
        res.writeHead(503).end()
        return
      }
      const url = new URL(req.url ?? '/', 'http://x')
      res.setHeader('content-type', 'application/json')
      if (url.pathname === '/api/v3/simple/token_price/ethereum') {
        const asked = (url.searchParams.get('contract_addresses') ?? '').split(',')
        const body: Record<string, { usd: number }> = {}
        // CoinGecko answers only for the addresses it knows, keyed lowercase.
        if (asked.includes(USDC)) body[USDC] = { usd: 0.999912 }
        res.end(JSON.stringify(body))
      } else if (url.pathname === '/api/v3/simple/price') {
        res.end(JSON.stringify({ ethereum: { usd: 3012.45 } }))
      } else res.writeHead(404).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  it('answers known prices as decimal strings and leaves unknown ones out (null on the wire)', async () => {
    const src = new CoinGeckoPriceSource({
      source: 'coingecko',
      url: base,
      platform: 'ethereum',
      nativeCoinId: 'ethereum',
    })
    const p = await src.prices(['native', USDC, UNKNOWN])
    expect(p.get(USDC)).toBe('0.999912')
    expect(p.get('native')).toBe('3012.45')
    expect(p.has(UNKNOWN)).toBe(false)
    expect(
      seen.some(
        (u) => u.includes(`contract_addresses=${USDC},${UNKNOWN}`) && u.includes('vs_currencies=usd'),
      ),
    ).toBe(true)
  })

  it('caches answers for the TTL and turns a failing source into unknown prices', async () => {
    const errors: string[] = []
    const cached = new CachedPriceSource(
      new CoinGeckoPriceSource({ source: 'coingecko', url: base, platform: 'ethereum' }),
      60_000,
      (e) => errors.push(e.message),
    )
    const before = seen.length
    expect((await cached.prices([USDC])).get(USDC)).toBe('0.999912')
    expect((await cached.prices([USDC])).get(USDC)).toBe('0.999912')
    expect(seen.length).toBe(before + 1)
    failing = true
    try {
      const fresh = new CachedPriceSource(
        new CoinGeckoPriceSource({ source: 'coingecko', url: base, platform: 'ethereum' }),
        60_000,
        (e) => errors.push(e.message),
      )
      expect((await fresh.prices([USDC])).size).toBe(0)
      expect(errors[0]).toMatch(/HTTP 503/)
    } finally {
      failing = false
    }
  })
})

describe('static price source', () => {
  it('reads inline prices and a file, and re-reads the file when it changes', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-prices-'))
    const file = path.join(dir, 'prices.json')
    const src: PriceSource = new StaticPriceSource({ native: '2000' }, file)
    expect((await src.prices(['native', USDC])).get(USDC)).toBeUndefined()
    writeFileSync(file, JSON.stringify({ [USDC.toUpperCase().replace('0X', '0x')]: '1.0001' }))
    const p = await src.prices(['native', USDC])
    expect(p.get(USDC)).toBe('1.0001')
    expect(p.get('native')).toBe('2000')
    writeFileSync(file, JSON.stringify({ [USDC]: '0.98' }))
    utimesSync(file, new Date(), new Date(Date.now() + 5000))
    expect((await src.prices([USDC])).get(USDC)).toBe('0.98')
    writeFileSync(file, JSON.stringify({ [USDC]: 0.98 }))
    utimesSync(file, new Date(), new Date(Date.now() + 10_000))
    await expect(src.prices([USDC])).rejects.toThrow(
      new RegExp(`prices.json is invalid: ${USDC}: .*expected string`),
    )
  })
})

describe('Chainlink aggregator source on anvil', () => {
  let anvil: AnvilProcess
  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(() => anvil?.stop())

  it('reads latestRoundData with the feed decimals; stale or non-positive answers are unknown', async () => {
    const dev = new Devnet(anvil.url)
    const feed = await dev.deploy('DemoAggregator', [8])
    const now = BigInt(Math.floor(Date.now() / 1000))
    await dev.send('DemoAggregator', feed, 'set', [301245000000n, now])
    const pool = new FailoverPool([{ url: anvil.url }], 5000)
    try {
      const src = new ChainlinkPriceSource(
        { pool, chain: 'ethereum', network: 'devnet' },
        {
          source: 'chainlink',
          feeds: { native: feed },
          maxAgeSeconds: 3600,
        },
      )
      expect((await src.prices(['native', USDC])).get('native')).toBe('3012.45')
      await dev.send('DemoAggregator', feed, 'set', [301245000000n, now - 7200n])
      expect((await src.prices(['native'])).has('native')).toBe(false)
      await dev.send('DemoAggregator', feed, 'set', [-1n, now])
      expect((await src.prices(['native'])).has('native')).toBe(false)
    } finally {
      await pool.close()
    }
  })
})

describe('token lists (Uniswap format)', () => {
  const list = {
    name: 'Test List',
    timestamp: '2026-01-01T00:00:00Z',
    version: { major: 1, minor: 0, patch: 0 },
    tokens: [
      {
        chainId: 1,
        address: USDC,
        name: 'USD Coin',
        symbol: 'USDC',
        decimals: 6,
        logoURI: 'https://x.test/usdc.png',
      },
      {
        chainId: 1,
        address: UNKNOWN,
        name: 'Bad Logo',
        symbol: 'BAD',
        decimals: 18,
        logoURI: 'javascript:alert(1)',
      },
    ],
  }

  it('loads from a file and finds logos by chain id and address; unsafe logo schemes are dropped', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-lists-'))
    const file = path.join(dir, 'list.json')
    writeFileSync(file, JSON.stringify(list))
    const errors: string[] = []
    const idx = await loadTokenLists([file, path.join(dir, 'missing.json')], (s) => errors.push(s))
    expect(idx.get(1, USDC.toUpperCase().replace('0X', '0x') as Address)?.logoURI).toBe(
      'https://x.test/usdc.png',
    )
    expect(idx.get(137, USDC)).toBeUndefined()
    expect(idx.get(1, UNKNOWN)?.logoURI).toBeNull()
    expect(errors).toEqual([path.join(dir, 'missing.json')])
  })

  it('rejects an invalid list naming the field', () => {
    const bad = { ...list, tokens: [{ ...list.tokens[0], decimals: 'six' }] }
    expect(() => parseTokenList(bad, 'bad.json')).toThrow(
      /token list bad\.json is invalid: tokens\[0\]\.decimals/,
    )
    expect(() => parseTokenList({ ...list, version: undefined }, 'v.json')).toThrow(/version/)
  })
})
