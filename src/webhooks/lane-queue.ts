import type { Lane } from './lanes.ts'
import type { ClaimedEvent } from './store.ts'

/**
 * The delivery worker's claimed lanes and its slots: lanes wait here until a slot is free and
 * their receiver's host is below its cap, so a slow receiver's lanes wait while everyone else's
 * go. Counts lanes per host in flight (the cap applies to these) and claimed (in flight or
 * waiting: what the next claim leaves out).
 */
export class LaneQueue {
  /**
   * Lanes claimed ahead, waiting for a free slot (at most `concurrency`, at most twice the
   * per-host cap per host). Claiming ahead keeps the claim query off the path between one
   * delivery ending and the next starting: a claim costs tens of milliseconds under load,
   * while a delivery to a fast receiver takes one.
   */
  private ready: Lane[] = []
  private running = 0
  private readonly perHost = new Map<string, number>()
  private readonly claimedPerHost = new Map<string, number>()
  private readonly webhookHost = new Map<string, string>()

  constructor(
    private readonly concurrency: number,
    private readonly perHostCap: number,
  ) {}

  /** Lanes in flight. */
  get inflight(): number {
    return this.running
  }

  /** Lanes waiting for a slot. */
  get waiting(): number {
    return this.ready.length
  }

  /** A claimed lane joins the queue. */
  add(events: ClaimedEvent[], claimedAt: number, rollbacks: number): Lane {
    const first = events[0] as ClaimedEvent
    let host = ''
    try {
      host = new URL(first.url).host
    } catch {}
    if (this.webhookHost.size > 100_000) this.webhookHost.clear()
    this.webhookHost.set(first.webhook_id, host)
    this.claimedPerHost.set(host, (this.claimedPerHost.get(host) ?? 0) + 1)
    const lane = { events, host, claimedAt, rollbacks }
    this.ready.push(lane)
    return lane
  }

  /** Webhooks of hosts that already have twice their cap of lanes claimed (in flight or waiting). */
  saturatedWebhooks(): string[] {
    const out: string[] = []
    for (const [webhook, host] of this.webhookHost) {
      if ((this.claimedPerHost.get(host) ?? 0) >= 2 * this.perHostCap) out.push(webhook)
    }
    return out
  }

  /**
   * Starts waiting lanes while slots are free, skipping hosts at their cap. A lane `stale`
   * finds is `drop`ped (given back unattempted); `start` runs a lane, which later calls
   * `finished`. Ends early once `stopping`.
   */
  dispatch(
    stopping: () => boolean,
    stale: (lane: Lane) => boolean,
    drop: (lane: Lane) => void,
    start: (lane: Lane) => void,
  ): void {
    if (this.ready.length === 0 || this.running >= this.concurrency) return
    const keep: Lane[] = []
    let i = 0
    // Stops at the first lane that finds every slot taken: with hundreds of lanes waiting, each
    // finished delivery would otherwise walk the whole queue.
    for (; i < this.ready.length && this.running < this.concurrency && !stopping(); i++) {
      const lane = this.ready[i] as Lane
      if (stale(lane)) {
        this.unclaim(lane.host)
        drop(lane)
        continue
      }
      if ((this.perHost.get(lane.host) ?? 0) >= this.perHostCap) keep.push(lane)
      else {
        this.running++
        this.perHost.set(lane.host, (this.perHost.get(lane.host) ?? 0) + 1)
        start(lane)
      }
    }
    this.ready = i === 0 ? this.ready : keep.concat(this.ready.slice(i))
  }

  /** A started lane ended: its slot and its host's count are free again. */
  finished(host: string): void {
    this.running--
    const left = (this.perHost.get(host) ?? 1) - 1
    if (left <= 0) this.perHost.delete(host)
    else this.perHost.set(host, left)
    this.unclaim(host)
  }

  /** Takes every waiting lane out (the worker stops and gives them back). */
  drain(): Lane[] {
    const waiting = this.ready
    this.ready = []
    return waiting
  }

  private unclaim(host: string): void {
    const left = (this.claimedPerHost.get(host) ?? 1) - 1
    if (left <= 0) this.claimedPerHost.delete(host)
    else this.claimedPerHost.set(host, left)
  }
}
