import type { ClaimedEvent } from './store.ts'

/** Events (in seq order) grouped into one lane per webhook, each still in seq order. */
export function lanesOf(events: readonly ClaimedEvent[]): Map<string, ClaimedEvent[]> {
  const lanes = new Map<string, ClaimedEvent[]>()
  for (const ev of events) {
    const lane = lanes.get(ev.webhook_id)
    if (lane) lane.push(ev)
    else lanes.set(ev.webhook_id, [ev])
  }
  return lanes
}

/** A claimed lane: one webhook's events in block order, with when they were leased. */
export interface Lane {
  events: ClaimedEvent[]
  host: string
  claimedAt: number
  /** The worker's rollback count at the claim: a reorg since then sends the lane back. */
  rollbacks: number
}
