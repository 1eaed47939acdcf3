import { z } from 'zod'
import { getBlockNumber, readUnchecked, toQuantity } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { formatUnits, parseDecimal } from '../common/decimal.ts'
import { invalidRequest } from '../errors.ts'
import { DEFAULT_MIN_PRIORITY_FEE_GWEI } from './price-config.ts'

/**
 * Gas price estimates (docs/gas.md) from `eth_feeHistory`.
 *
 * The method, and why:
 * - Window: the last 20 blocks with reward percentiles 10 / 50 / 90. Twenty blocks is geth's
 *   oracle window: long enough that one odd block does not swing the answer, short enough to
 *   follow demand. MetaMask looks at 5 blocks and low percentiles (10/20/30), which undershoots
 *   when demand rises; geth answers one number (60th percentile).
 * - Tip per level: the median, over the blocks that carried transactions, of each block's 10th
 *   (slow), 50th (standard) and 90th (fast) percentile tip. Empty blocks are left out: their
 *   "reward" of 0 says nothing about what inclusion costs. Each tip is at least the network's
 *   configured `gas.minPriorityFeeGwei` (per network, not a fixed floor: MetaMask/core #756).
 * - Base fee: `eth_feeHistory` returns one base fee more than blocks asked for — the next
 *   block's, which the node computes by the EIP-1559 rule. That projection is what the max fees
 *   build on: slow ×1.10 (MetaMask's low), standard ×1.25 (two consecutive full blocks raise the
 *   base fee by at most 1.125² ≈ 1.27), fast ×2 (ethers' default; survives ~6 full blocks).
 * - `max_fee = ceil(next_base × multiplier) + tip`. All in wei as bigint; gwei strings are exact.
 * - `estimated_seconds`: 1 block (fast), 2 (standard), 4 (slow), times the network's block time.
 *
 * `base_fee_gwei` is the base fee of `block_number`, the head the estimate was computed at.
 * Monotonicity: per block, p10 ≤ p50 ≤ p90, so the medians keep that order; the floor and the
 * multipliers do too, hence slow ≤ standard ≤ fast always.
 */

const BLOCKS = 20
const PERCENTILES = [10, 50, 90] as const
const LEVELS = [
  { name: 'slow', num: 11n, den: 10n, blocks: 4 },
  { name: 'standard', num: 5n, den: 4n, blocks: 2 },
  { name: 'fast', num: 2n, den: 1n, blocks: 1 },
] as const

export interface FeeEstimate {
  max_fee_gwei: string
  max_priority_fee_gwei: string
  estimated_seconds: number
}

export interface GasPrices {
  chain: string
  block_number: number
  base_fee_gwei: string
  estimates: { slow: FeeEstimate; standard: FeeEstimate; fast: FeeEstimate }
  updated_at: string
}

const hexQty = z.string().regex(/^0x[0-9a-fA-F]+$/)
const feeHistorySchema = z.object({
  oldestBlock: hexQty,
  baseFeePerGas: z.array(hexQty).min(1),
  gasUsedRatio: z.array(z.number()),
  reward: z.array(z.array(hexQty)).optional(),
})

const GWEI = 10n ** 9n
export const weiToGwei = (wei: bigint): string => formatUnits(wei, 9)

export function gweiToWei(gwei: string): bigint {
  const d = parseDecimal(gwei)
  if (!d || d.scale > 9) throw new Error(`not a gwei amount with at most 9 decimals: ${gwei}`)
  return (d.mantissa * GWEI) / 10n ** BigInt(d.scale)
}

const maxBig = (a: bigint, b: bigint): bigint => (a < b ? b : a)

/** The upper median (sorted[n/2]); 0 for no values. */
function median(values: bigint[]): bigint {
  if (values.length === 0) return 0n
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return sorted[Math.floor(sorted.length / 2)] as bigint
}

/** Pure estimate from a fee history answer (exported for the bench and for reading). */
export function estimateFromHistory(
  raw: unknown,
  opts: { chain: string; head: bigint; minTipWei: bigint; blockTimeMs: number; now: Date },
): GasPrices {
  const h = feeHistorySchema.parse(raw)
  const bases = h.baseFeePerGas.map((b) => BigInt(b))
  const next = bases[bases.length - 1] as bigint
  const headBase = bases.length >= 2 ? (bases[bases.length - 2] as bigint) : next
  const rows = (h.reward ?? []).filter((_, i) => (h.gasUsedRatio[i] ?? 0) > 0)
  const estimates = {} as GasPrices['estimates']
  LEVELS.forEach((level, i) => {
    const observed = median(rows.map((r) => (r[i] === undefined ? 0n : BigInt(r[i]))))
    const tip = maxBig(observed, opts.minTipWei)
    const base = (next * level.num + level.den - 1n) / level.den
    estimates[level.name] = {
      max_fee_gwei: weiToGwei(base + tip),
      max_priority_fee_gwei: weiToGwei(tip),
      estimated_seconds: Math.max(1, Math.ceil((opts.blockTimeMs * level.blocks) / 1000)),
    }
  })
  return {
    chain: opts.chain,
    block_number: Number(opts.head),
    base_fee_gwei: weiToGwei(headBase),
    estimates,
    updated_at: opts.now.toISOString(),
  }
}

interface Cached {
  head: bigint
  checkedAt: number
  value: GasPrices
}

/**
 * Computes a network's estimate once per new head and serves it from memory until the head
 * moves. Whether it moved is asked of the node at most every quarter block time (50 ms – 1 s),
 * and concurrent requests share one refresh, so load on the upstream does not grow with traffic.
 */
export class GasPriceService {
  private readonly cache = new Map<string, Cached>()
  private readonly inflight = new Map<string, Promise<GasPrices>>()

  async prices(net: Network): Promise<GasPrices> {
    if (net.kind !== 'evm')
      throw invalidRequest(`chain ${net.slug} is not an EVM network; gas prices are EVM-only`)
    const c = this.cache.get(net.slug)
    const recheckMs = Math.min(1000, Math.max(50, Math.floor(net.config.blockTimeMs / 4)))
    if (c && Date.now() - c.checkedAt < recheckMs) return c.value
    let p = this.inflight.get(net.slug)
    if (!p) {
      p = this.refresh(net, c).finally(() => this.inflight.delete(net.slug))
      this.inflight.set(net.slug, p)
    }
    return p
  }

  private async refresh(net: Network, c: Cached | undefined): Promise<GasPrices> {
    const head = await getBlockNumber(net)
    if (c && c.head === head) {
      c.checkedAt = Date.now()
      return c.value
    }
    // Its answer is checked by estimateFromHistory's own schema.
    const history = await readUnchecked(net, 'eth_feeHistory', [
      toQuantity(BigInt(BLOCKS)),
      toQuantity(head),
      [...PERCENTILES],
    ])
    const value = estimateFromHistory(history, {
      chain: net.slug,
      head,
      minTipWei: gweiToWei(net.config.gas?.minPriorityFeeGwei ?? DEFAULT_MIN_PRIORITY_FEE_GWEI),
      blockTimeMs: net.config.blockTimeMs,
      now: new Date(),
    })
    this.cache.set(net.slug, { head, checkedAt: Date.now(), value })
    return value
  }
}
