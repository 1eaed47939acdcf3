/**
 * Exact decimal arithmetic on strings and bigints: amounts and prices never pass through a
 * JavaScript float.
 */

/** `raw / 10^decimals` as a decimal string without trailing zeros ("1.5", "0", "42"). */
export function formatUnits(raw: bigint, decimals: number): string {
  const neg = raw < 0n
  const abs = neg ? -raw : raw
  const s = abs.toString().padStart(decimals + 1, '0')
  const int = s.slice(0, s.length - decimals)
  const frac = decimals > 0 ? s.slice(s.length - decimals).replace(/0+$/, '') : ''
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`
}

/** A non-negative decimal string as integer mantissa and scale: "1.25" → {12 5n, 2}. */
export function parseDecimal(value: string): { mantissa: bigint; scale: number } | null {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(value)
  if (!m) return null
  const frac = m[2] ?? ''
  return { mantissa: BigInt(`${m[1]}${frac}`), scale: frac.length }
}

/** `raw / 10^decimals × price`, exact (the product of two finite decimals is finite). */
export function multiplyDecimal(raw: bigint, decimals: number, price: string): string | null {
  const p = parseDecimal(price)
  if (!p) return null
  return formatUnits(raw * p.mantissa, decimals + p.scale)
}

/**
 * A JSON number from a price API as a plain decimal string. Price APIs answer in JSON numbers;
 * the shortest round-trip form is what the API meant, expanded out of exponent notation.
 */
export function numberToDecimal(n: number): string | null {
  if (!Number.isFinite(n) || n < 0) return null
  const s = String(n)
  const exp = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s)
  if (!exp) return s
  const digits = `${exp[1]}${exp[2] ?? ''}`
  const e = Number(exp[3]) - (exp[2]?.length ?? 0)
  return e >= 0 ? digits + '0'.repeat(e) : formatUnits(BigInt(digits), -e)
}
