import { formatUnits, multiplyDecimal, parseDecimal } from '../common/decimal.ts'

/**
 * USD amounts of the sponsorship rules: exact non-negative decimal strings, compared and added
 * as scaled bigints (src/common/decimal.ts parses them). PostgreSQL's `numeric` text form is
 * accepted too (it keeps trailing zeros: "0.50"); results are canonical (formatUnits: no trailing zeros).
 */

function parse(v: string): { mantissa: bigint; scale: number } {
  const d = parseDecimal(v)
  if (!d) throw new Error(`not a non-negative decimal: ${v}`)
  return d
}

function align(a: string, b: string): [bigint, bigint, number] {
  const x = parse(a)
  const y = parse(b)
  const scale = Math.max(x.scale, y.scale)
  return [x.mantissa * 10n ** BigInt(scale - x.scale), y.mantissa * 10n ** BigInt(scale - y.scale), scale]
}

export function compareDecimal(a: string, b: string): -1 | 0 | 1 {
  const [x, y] = align(a, b)
  return x < y ? -1 : x > y ? 1 : 0
}

export function addDecimal(a: string, b: string): string {
  const [x, y, scale] = align(a, b)
  return formatUnits(x + y, scale)
}

/** The canonical form: no trailing zeros, "0" for zero. */
export function normalizeDecimal(v: string): string {
  const d = parse(v)
  return formatUnits(d.mantissa, d.scale)
}

/** `wei × usdPerNative / 10^18`, exact. */
export function weiToUsd(wei: bigint, usdPerNative: string, decimals = 18): string {
  const usd = multiplyDecimal(wei, decimals, usdPerNative)
  if (usd === null) throw new Error(`not a non-negative decimal: ${usdPerNative}`)
  return usd
}

export const isDecimal = (v: string): boolean => parseDecimal(v) !== null
