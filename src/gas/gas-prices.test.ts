import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Hash, Hex } from '../types.ts'
import { estimateFromHistory, type GasPrices, gweiToWei } from './price-service.ts'

const GWEI = 10n ** 9n
const hex = (n: bigint) => `0x${n.toString(16)}`
const GWEI_STRING = /^\d+(\.\d{1,9})?$/

// Only the first backend: gas prices keep no state in the database.
describe.each(storageBackends().slice(0, 1))('gas prices on $name', (backend) => {
  let anvil: AnvilProcess
  let h: TestHalyard
  let close: () => Promise<void>
  let key: string
  let accounts: Hex[]

  const get = async (chain: string, k = key) => {
    const res = await fetch(`${h.baseUrl}/gas/${chain}/prices`, { headers: { 'x-api-key': k } })
    return { status: res.status, body: (await res.json()) as GasPrices & Record<string, unknown> }
  }
  const head = async () => BigInt((await rpc(anvil.url, 'eth_blockNumber', [])) as string)
  /** The estimate for the current head (the head check runs at most every quarter block time). */
  const pricesAtHead = async (chain = 'ethereum-devnet'): Promise<GasPrices> => {
    const want = Number(await head())
    for (let i = 0; i < 100; i++) {
      const { body } = await get(chain)
      if (body.block_number === want) return body
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`no estimate for block ${want}`)
  }
  const send = (from: Hex, tipGwei: bigint, maxFee: bigint = 100n * GWEI) =>
    rpc(anvil.url, 'eth_sendTransaction', [
      {
        from,
        to: '0x000000000000000000000000000000000000beef',
        value: '0x1',
        gas: hex(21_000n),
        maxPriorityFeePerGas: hex(tipGwei * GWEI),
        maxFeePerGas: hex(maxFee),
      },
    ]) as Promise<Hash>
  const block = (n: bigint | 'latest') =>
    rpc(anvil.url, 'eth_getBlockByNumber', [n === 'latest' ? n : hex(n), false]) as Promise<{
      number: Hex
      baseFeePerGas: Hex
      transactions: Hash[]
    }>

  beforeAll(async () => {
    anvil = await startAnvil()
    const storage = await backend.open()
    h = await startTestHalyard({
      networks: [
        anvilNetwork(anvil, { blockTimeMs: 2000 }),
        // The same node with a per-network tip floor above the observed slow tip.
        anvilNetwork(anvil, {
          network: 'floored',
          indexer: { enabled: false },
          gas: { minPriorityFeeGwei: '1.5' },
        }),
      ],
      storage,
    })
    close = async () => {
      await h.close()
      await storage.close()
    }
    key = await h.createKey({ scopes: ['data:read'] })
    accounts = (await rpc(anvil.url, 'eth_accounts', [])) as Hex[]
    // Blocks of chosen tips (gwei), five equal-gas transfers each, mined by hand.
    await rpc(anvil.url, 'evm_setAutomine', [false])
    for (const tips of [
      [1n, 2n, 3n, 5n, 8n],
      [2n, 4n, 6n, 8n, 10n],
      [1n, 1n, 2n, 20n, 30n],
    ]) {
      for (const [i, tip] of tips.entries()) await send(accounts[i + 1] as Hex, tip)
      await rpc(anvil.url, 'evm_mine', [])
    }
  })
  afterAll(async () => {
    await close?.()
    await anvil?.stop()
  })

  it('orders slow ≤ standard ≤ fast, with tips from the recent blocks percentiles', async () => {
    const p = await pricesAtHead()
    expect(Object.keys(p).sort()).toEqual([
      'base_fee_gwei',
      'block_number',
      'chain',
      'estimates',
      'updated_at',
    ])
    expect(p.chain).toBe('ethereum-devnet')
    const { slow, standard, fast } = p.estimates
    for (const e of [slow, standard, fast]) {
      expect(e.max_fee_gwei).toMatch(GWEI_STRING)
      expect(e.max_priority_fee_gwei).toMatch(GWEI_STRING)
    }
    // Medians over the three blocks of their 10th / 50th / 90th percentile tips.
    expect([slow, standard, fast].map((e) => e.max_priority_fee_gwei)).toEqual(['1', '3', '10'])
    const fee = (e: typeof slow) => gweiToWei(e.max_fee_gwei)
    expect(fee(slow) <= fee(standard) && fee(standard) <= fee(fast)).toBe(true)
    // Seconds from the block time (2 s): 1, 2 and 4 blocks.
    expect([fast, standard, slow].map((e) => e.estimated_seconds)).toEqual([2, 4, 8])
    const latest = await block('latest')
    expect(p.block_number).toBe(Number(latest.number))
    expect(gweiToWei(p.base_fee_gwei)).toBe(BigInt(latest.baseFeePerGas))
    expect(Number.isNaN(Date.parse(p.updated_at))).toBe(false)
  })

  it('applies the per-network minimum tip from config', async () => {
    const p = await pricesAtHead('ethereum-floored')
    expect(
      [p.estimates.slow, p.estimates.standard, p.estimates.fast].map((e) => e.max_priority_fee_gwei),
    ).toEqual(['1.5', '3', '10'])
  })

  it('computes once per head, and fees fit the next block: a standard-fee transaction is mined in it', async () => {
    const p = await pricesAtHead()
    // Same head: the same computation (same updated_at).
    expect((await get('ethereum-devnet')).body.updated_at).toBe(p.updated_at)
    const h0 = await head()
    const std = p.estimates.standard
    const standardTx = await rpc(anvil.url, 'eth_sendTransaction', [
      {
        from: accounts[7],
        to: '0x000000000000000000000000000000000000beef',
        value: '0x1',
        gas: hex(21_000n),
        maxPriorityFeePerGas: hex(gweiToWei(std.max_priority_fee_gwei)),
        maxFeePerGas: hex(gweiToWei(std.max_fee_gwei)),
      },
    ])
    // (anvil refuses a max fee below the base fee outright, so a too-low estimate fails here.)
    await rpc(anvil.url, 'evm_mine', [])
    const next = await block(h0 + 1n)
    expect(next.transactions).toContain(standardTx)
    // Every level's max fee is the projected next base fee times its multiplier plus its tip.
    const nextBase = BigInt(next.baseFeePerGas)
    const ceilMul = (num: bigint, den: bigint) => (nextBase * num + den - 1n) / den
    expect(gweiToWei(p.estimates.slow.max_fee_gwei)).toBe(
      ceilMul(11n, 10n) + gweiToWei(p.estimates.slow.max_priority_fee_gwei),
    )
    expect(gweiToWei(std.max_fee_gwei)).toBe(ceilMul(5n, 4n) + gweiToWei(std.max_priority_fee_gwei))
    expect(gweiToWei(p.estimates.fast.max_fee_gwei)).toBe(
      ceilMul(2n, 1n) + gweiToWei(p.estimates.fast.max_priority_fee_gwei),
    )
    // A new head gives a new estimate.
    const after = await pricesAtHead()
    expect(after.block_number).toBe(p.block_number + 1)
    await rpc(anvil.url, 'anvil_dropAllTransactions', [])
  })

  it('answers 404 for an unknown chain and 403 without data:read', async () => {
    expect((await get('nowhere')).status).toBe(404)
    const noScope = await h.createKey({ scopes: ['wallets:manage'] })
    expect((await get('ethereum-devnet', noScope)).status).toBe(403)
  })
})

describe('estimateFromHistory', () => {
  const opts = { chain: 'x', head: 100n, minTipWei: 1n, blockTimeMs: 12_000, now: new Date(0) }

  it('ignores empty blocks, floors tips per network and keeps exact gwei strings', () => {
    const p = estimateFromHistory(
      {
        oldestBlock: '0x62',
        // Two blocks plus the projected next base fee (7 wei: amounts far below a gwei stay exact).
        baseFeePerGas: ['0x9', '0x8', '0x7'],
        gasUsedRatio: [0, 0.5],
        reward: [
          ['0x0', '0x0', '0x0'],
          ['0x3b9aca00', '0x77359400', '0xb2d05e00'],
        ],
      },
      opts,
    )
    expect(p.base_fee_gwei).toBe('0.000000008')
    expect(p.estimates.slow).toEqual({
      max_fee_gwei: '1.000000008',
      max_priority_fee_gwei: '1',
      estimated_seconds: 48,
    })
    expect(p.estimates.standard.max_fee_gwei).toBe('2.000000009')
    expect(p.estimates.fast.max_fee_gwei).toBe('3.000000014')
    expect(p.estimates.fast.estimated_seconds).toBe(12)
  })

  it('falls back to the floor when no recent block carried a transaction', () => {
    const p = estimateFromHistory(
      {
        oldestBlock: '0x1',
        baseFeePerGas: ['0x0', '0x0'],
        gasUsedRatio: [0],
        reward: [['0x0', '0x0', '0x0']],
      },
      { ...opts, minTipWei: 1_500_000n },
    )
    expect(p.base_fee_gwei).toBe('0')
    for (const e of Object.values(p.estimates)) {
      expect(e.max_priority_fee_gwei).toBe('0.0015')
      expect(e.max_fee_gwei).toBe('0.0015')
    }
  })
})
