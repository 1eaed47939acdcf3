import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { Lane } from './lanes.ts'
import * as store from './store.ts'

/** Leases are renewed this many times per lease: a renewal delayed by a busy process or database is not the end of it. */
const RENEW_SHARE = 4

/**
 * The events a delivery worker holds under its lease (claimed, waiting, in flight, or sent and
 * not yet recorded) and the lanes they belong to: renewed together every quarter of a lease
 * while the worker lives. A worker that dies stops renewing, and its events come back to the
 * queue when the lease runs out (docs/dependency-failures.md).
 */
export class LeaseKeeper {
  private readonly held = new Set<string>()
  private readonly lanes = new Set<Lane>()
  private timer: NodeJS.Timeout | undefined
  private renewing = false

  constructor(
    private readonly db: DB,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.renew(), Math.floor(this.leaseMs / RENEW_SHARE))
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
  }

  /** Whether this worker holds the event `seq` under its lease. */
  holds(seq: string): boolean {
    return this.held.has(seq)
  }

  /** A claimed lane: its events are renewed from now on. */
  hold(lane: Lane): void {
    this.lanes.add(lane)
    for (const e of lane.events) this.held.add(e.seq)
  }

  /** The lane ended (sent, given back, or failed): its start time no longer moves on. */
  dropLane(lane: Lane): void {
    this.lanes.delete(lane)
  }

  /** Events leave this worker's hands: given back, or their outcome recorded. */
  letGo(seqs: readonly string[]): void {
    for (const seq of seqs) this.held.delete(seq)
  }

  /**
   * Extends the leases this worker holds. On success every live lane counts as leased from when
   * the renewal began; a renewal that fails leaves the leases to run out (another instance may
   * then send an event again: at-least-once).
   */
  private async renew(): Promise<void> {
    if (this.renewing || this.held.size === 0) return
    this.renewing = true
    const at = Date.now()
    const lanes = [...this.lanes]
    try {
      await store.renew(this.db, [...this.held], this.leaseMs)
      for (const lane of lanes) if (lane.claimedAt < at) lane.claimedAt = at
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'renewing webhook leases failed')
    } finally {
      this.renewing = false
    }
  }
}
