import type { UpstreamState } from './upstream-state.ts'

/** Traffic share of an eligible upstream: its weight over its latency squared. */
const score = (s: UpstreamState) => s.weight / (s.latencyMs + 0.5) ** 2

/**
 * The order in which a call tries upstreams: eligible ones first (the first picked at random,
 * weighted by weight / latency², so load spreads as configured and slow nodes get little, the
 * rest best score first), then verified-but-excluded ones as a last resort. Unverified and
 * wrong-chain upstreams are never candidates. Sticky methods (filters) keep configured order so
 * they land on the node holding the filter.
 */
export function orderCandidates(
  states: readonly UpstreamState[],
  eligible: (s: UpstreamState) => boolean,
  sticky: boolean,
): UpstreamState[] {
  // One array, eligible ones first (in configured order), then the fallbacks.
  const out: UpstreamState[] = []
  let eligibleCount = 0
  for (const s of states) {
    if (s.chainOk !== true) continue
    if (!eligible(s)) out.push(s)
    // No fallback yet (the usual case): appending is the same place, without a splice.
    else if (eligibleCount++ === out.length) out.push(s)
    else out.splice(eligibleCount - 1, 0, s)
  }
  if (eligibleCount < 2 || sticky) return out
  // Latency moves with every call, so the scores are live; the pick is one pass over them
  // (the chance of each is its share of the total, whatever the order walked).
  let total = 0
  for (let i = 0; i < eligibleCount; i++) total += score(out[i]!)
  let r = Math.random() * total
  let pick = 0
  for (; pick < eligibleCount - 1; pick++) {
    r -= score(out[pick]!)
    if (r <= 0) break
  }
  const chosen = out[pick]!
  out.copyWithin(1, 0, pick)
  out[0] = chosen
  // The failover order after the pick: best score first. Two eligible need no sort.
  if (eligibleCount > 2) {
    const rest = out.slice(1, eligibleCount).sort((x, y) => score(y) - score(x))
    for (let i = 0; i < rest.length; i++) out[i + 1] = rest[i]!
  }
  return out
}
