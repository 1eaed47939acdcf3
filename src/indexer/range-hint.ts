/**
 * What a provider's eth_getLogs refusal says will work instead: the block range it names (for
 * the same start), or the widest span it allows; undefined when it names neither (the caller
 * halves). Each provider words it its own way; the ones below are those seen in the wild.
 */
export type RangeHint = { kind: 'range'; from: bigint; to: bigint } | { kind: 'span'; blocks: bigint }

/** Messages naming the range that works: `[0x…, 0x…]`. */
const NAMED_RANGE: readonly RegExp[] = [
  // Alchemy: "…up to a 10K block range… this block range should work: [0x1, 0x2710]"
  /this block range should work: \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
  // Infura, QuickNode, zkSync: "query returned more than 10000 results. Try with this block range [0x…, 0x…]."
  /try with this block range \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
]

/** Messages naming the widest span (in blocks), first match wins: the more specific first. */
const NAMED_SPAN: readonly RegExp[] = [
  // eRPC: the refusal's details carry the upstream's limit.
  /"?maxAllowedRange"?\s*[:=]\s*(\d+)/i,
  // Avalanche: "requested too many blocks from 0 to 5000, maximum is set to 2048"
  /maximum is set to ([\d,]+)/i,
  // Sei: "block range too large (2001), maximum allowed is 2000"
  /maximum allowed is ([\d,]+)/i,
  // Coinbase: "please limit the query to at most 1000 blocks"
  /limit the query to at most ([\d,]+) blocks/i,
  // dRPC: "ranges over 10000 blocks are not supported on freetier"
  /ranges over ([\d,]+) blocks/i,
  // BlastAPI (plans): "exceeds the range allowed for your plan (50000 > 10000)"
  /range allowed for your plan \(\d+ > (\d+)\)/i,
  // Ankr: "maximum [from, to] blocks distance: 1000"
  /blocks distance: ([\d,]+)/i,
  // Moonbeam: "block range is too wide (maximum 1024)"
  /too wide \(maximum ([\d,]+)\)/i,
  // QuickNode, 1RPC, BlastAPI: "eth_getLogs is limited to a 10,000 range"; BlockPI: "limited to 5000 blocks"
  /limited to an? ([\d,]+)/i,
  /limited to ([\d,]+) block/i,
  // Geth-style and Llamarpc: "exceed maximum block range: 5000", "query exceeds max block range 100000"
  /exceeds? (?:the )?max(?:imum)? block range:? ([\d,]+)/i,
  // "range too large, max 2000"; "block range too large, max is 10000"
  /range too (?:large|wide),? max(?:imum)?(?: is)?:? ([\d,]+)/i,
  // PublicNode: "maximum block range: 50000"; Cloudflare: "Max range: 800"
  /max(?:imum)? (?:block )?range:? ([\d,]+)/i,
  // thirdweb: "Maximum allowed number of requested blocks is 1000"
  /number of requested blocks is ([\d,]+)/i,
  // Aurora: "up to a 2000 block range"
  /up to an? ([\d,]+) block range/i,
  // Merkle: "eth_getLogs range is too large, max is 10k blocks"
  /max is ([\d,]+k) blocks/i,
]

/**
 * Refusals that name no number but whose provider's limit is known. Base's public endpoint says
 * "block range too large" for ranges over 2,000 blocks; the hint is only taken when narrower
 * than the refused range, so a wrong guess ends in halving, never a loop.
 */
const KNOWN_LIMIT: readonly [RegExp, bigint][] = [[/^block range too large$/i, 2000n]]

export function rangeHint(message: string, from: bigint, to: bigint): RangeHint | undefined {
  for (const re of NAMED_RANGE) {
    const m = re.exec(message)
    if (!m) continue
    const a = BigInt(m[1] as string)
    const b = BigInt(m[2] as string)
    if (b < a) continue
    // A range for our start is the answer; one elsewhere still tells the width that works.
    return a === from && b <= to ? { kind: 'range', from: a, to: b } : { kind: 'span', blocks: b - a + 1n }
  }
  for (const re of NAMED_SPAN) {
    const m = re.exec(message)
    if (!m) continue
    const n = blockCount(m[1] as string)
    if (n >= 1n) return { kind: 'span', blocks: n }
  }
  for (const [re, n] of KNOWN_LIMIT) if (re.test(message.trim())) return { kind: 'span', blocks: n }
  return undefined
}

/**
 * The next range to ask for after [from, to] was refused with `message`: the named range, or
 * `from` plus the named span, when narrower than the refused one; else the first half. Null
 * when the range is one block (nothing narrower to try).
 */
export function narrowedRange(
  message: string,
  from: bigint,
  to: bigint,
): { from: bigint; to: bigint; named: boolean } | null {
  if (to <= from) return null
  const hint = rangeHint(message, from, to)
  const wide = to - from + 1n
  if (hint?.kind === 'range' && hint.to < to) return { from, to: hint.to, named: true }
  if (hint?.kind === 'span' && hint.blocks < wide) return { from, to: from + hint.blocks - 1n, named: true }
  return { from, to: from + wide / 2n - 1n, named: false }
}

/** "10,000" and "10k" are 10000 blocks. */
function blockCount(text: string): bigint {
  const digits = text.replace(/,/g, '')
  return /k$/i.test(digits) ? BigInt(digits.slice(0, -1)) * 1000n : BigInt(digits)
}
