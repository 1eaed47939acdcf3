import { type BackgroundLoop, periodicLoop } from '../common/background-loop.ts'
import { oneAtATime } from '../common/one-at-a-time.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import { utcDay } from './service.ts'
import { addUsage, type UsageDelta } from './store.ts'

/** How often a process writes what it counted (also on shutdown). */
export const DEFAULT_FLUSH_INTERVAL_MS = 5_000

interface Counter {
  requests: number
  computeUnits: number
  limited: number
}

/** One UTC day's counters: account → method → counts. */
interface DayCounters {
  readonly day: string
  readonly accounts: Map<string, Map<string, Counter>>
}

const newDay = (day: string): DayCounters => ({ day, accounts: new Map() })

/**
 * Counts usage in memory on the charging path and writes it in batches: every
 * DEFAULT_FLUSH_INTERVAL_MS one upsert per (account, day, method) row that changed, never a
 * write per request. Each process (instance or cluster worker) flushes its own counts; the
 * upserts add, so the rows hold the sum of all of them.
 *
 * Decision: counts not yet flushed are lost if the process is killed (at most one interval);
 * a clean stop (SIGTERM, Ctrl-C) flushes. A flush that fails keeps its counts for the next one.
 */
export class UsageRecorder {
  /**
   * Counters since the last flush, for the current UTC day; `record` touches only these (two
   * Map lookups). The day moves on a timer at midnight (and is checked at every flush), not by
   * reading the clock per request: on this project's VMs Date.now() alone costs ~0.3 µs.
   */
  private current: DayCounters
  /** Days that ended while unflushed, and counts a failed flush gave back. */
  private carried: DayCounters[] = []
  /** When `current` stops being today (start of the next UTC day), in ms. */
  private dayEndsAt: number
  private loop: BackgroundLoop | undefined
  private midnight: NodeJS.Timeout | undefined

  constructor(
    private readonly db: DB,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    const t = this.now()
    this.current = newDay(utcDay(t))
    this.dayEndsAt = nextDayStart(t)
  }

  /**
   * Counts one charge: `requests` requests and `computeUnits` CU when allowed; when refused
   * (429), `requests` limited ones instead (a refused request consumes nothing). A CU-only
   * charge (WebSocket pushes: 0 requests) refused counts nothing.
   * O(1), synchronous, never throws: it runs on the charging path of every request.
   */
  record(accountId: string, method: string, requests: number, computeUnits: number, limited: boolean): void {
    let methods = this.current.accounts.get(accountId)
    if (!methods) {
      methods = new Map()
      this.current.accounts.set(accountId, methods)
    }
    let c = methods.get(method)
    if (!c) {
      c = { requests: 0, computeUnits: 0, limited: 0 }
      methods.set(method, c)
    }
    if (limited) c.limited += requests
    else {
      c.requests += requests
      c.computeUnits += computeUnits
    }
  }

  /** Starts a new day's counters once the UTC day has changed. */
  private rollIfNewDay(): void {
    const t = this.now()
    if (t < this.dayEndsAt) return
    if (this.current.accounts.size > 0) this.carried.push(this.current)
    this.current = newDay(utcDay(t))
    this.dayEndsAt = nextDayStart(t)
  }

  /** Rolls the day at the next UTC midnight (a timer per day, not a clock read per request). */
  private armMidnight(): void {
    this.midnight = setTimeout(
      () => {
        this.rollIfNewDay()
        this.armMidnight()
      },
      Math.max(1, this.dayEndsAt - this.now()),
    )
    this.midnight.unref()
  }

  /** Writes every count taken so far (one flush at a time; a call during one waits for it, then runs). */
  readonly flush: () => Promise<void> = oneAtATime(() => this.write())

  private async write(): Promise<void> {
    this.rollIfNewDay()
    const days = [...this.carried, this.current]
    this.carried = []
    this.current = newDay(this.current.day)
    const deltas = toDeltas(days)
    if (deltas.length === 0) return
    const { failed, error } = await addUsage(this.db, deltas)
    if (failed.length === 0) return
    // Kept for the next flush; rows that did go in are not written twice.
    this.carried.push(...fromDeltas(failed))
    this.logger.warn(
      { err: (error as Error | undefined)?.message, rows: failed.length },
      'could not write usage; kept for the next flush',
    )
  }

  /** Flushes every `intervalMs` until stop(). */
  start(intervalMs = DEFAULT_FLUSH_INTERVAL_MS): void {
    if (this.loop) return
    this.loop = periodicLoop({
      failure: 'usage flush failed',
      logger: this.logger,
      intervalMs,
      work: () => this.flush(),
      unref: true,
    })
    this.loop.start()
    this.armMidnight()
  }

  /** Stops the timer and writes what is left (the server's close, before storage closes). */
  async stop(): Promise<void> {
    await this.loop?.stop()
    if (this.midnight) clearTimeout(this.midnight)
    this.loop = undefined
    this.midnight = undefined
    await this.flush()
  }
}

function nextDayStart(t: number): number {
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
}

/** Counters → rows to add, one per (account, day, method); the same key in two days' maps is summed. */
function toDeltas(days: readonly DayCounters[]): UsageDelta[] {
  const merged = new Map<string, UsageDelta & Counter>()
  for (const { day, accounts } of days) {
    for (const [accountId, methods] of accounts) {
      for (const [method, c] of methods) {
        if (c.requests === 0 && c.computeUnits === 0 && c.limited === 0) continue
        const key = `${accountId}\n${day}\n${method}`
        const row = merged.get(key)
        if (row) {
          row.requests += c.requests
          row.computeUnits += c.computeUnits
          row.limited += c.limited
        } else merged.set(key, { accountId, day, method, ...c })
      }
    }
  }
  return [...merged.values()]
}

function fromDeltas(deltas: readonly UsageDelta[]): DayCounters[] {
  const byDay = new Map<string, DayCounters>()
  for (const d of deltas) {
    let day = byDay.get(d.day)
    if (!day) {
      day = newDay(d.day)
      byDay.set(d.day, day)
    }
    let methods = day.accounts.get(d.accountId)
    if (!methods) {
      methods = new Map()
      day.accounts.set(d.accountId, methods)
    }
    methods.set(d.method, { requests: d.requests, computeUnits: d.computeUnits, limited: d.limited })
  }
  return [...byDay.values()]
}
