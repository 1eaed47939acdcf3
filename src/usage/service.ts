import { invalidRequest } from '../errors.ts'
import { DAY_MS } from '../limits/limiter.ts'
import type { Storage } from '../storage/database.ts'
import { type UsageCounts, usagePerDay, usagePerMethod } from './store.ts'

/**
 * Reading usage (GET /v1/usage and the dashboard): per day over a range of UTC days, and per
 * method for the range's last day. Counting is the recorder's job (recorder.ts); what it has
 * not flushed yet (at most one flush interval) is not here.
 */

/** Default range: the last 30 UTC days, today included. */
export const DEFAULT_DAYS = 30
/** Longest range one read may ask for, in days (both ends included). */
export const MAX_DAYS = 90

export interface UsageRange {
  /** First UTC day, YYYY-MM-DD (included). */
  readonly from: string
  /** Last UTC day, YYYY-MM-DD (included). */
  readonly to: string
}

export interface UsageDay extends UsageCounts {
  readonly date: string
}

export interface UsageMethod extends UsageCounts {
  readonly method: string
}

export interface UsageReport extends UsageRange {
  /** Every day of the range, oldest first; days without usage are zeros. */
  readonly days: UsageDay[]
  /** The day `methods` describes: the range's last day. */
  readonly methodsDate: string
  /** That day per method, heaviest (compute units) first. */
  readonly methods: UsageMethod[]
}

/** The UTC day of a time, YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Milliseconds at the start of a YYYY-MM-DD UTC day, or undefined when it is no calendar day. */
export function dayStart(day: string): number | undefined {
  const m = DATE.exec(day)
  if (!m) return undefined
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
  // Date.UTC rolls 2025-02-30 over into March: a day that does not round-trip does not exist.
  return utcDay(ms) === day ? ms : undefined
}

/**
 * The range a caller asked for, with defaults: `to` today, `from` 29 days before `to`. A 400
 * names the field: a date that is not YYYY-MM-DD or no calendar day, `from` after `to`, or a
 * range over MAX_DAYS.
 */
export function resolveRange(
  asked: { from?: string | undefined; to?: string | undefined },
  nowMs: number,
): UsageRange {
  const toMs = asked.to === undefined ? dayStart(utcDay(nowMs)) : dayStart(asked.to)
  if (toMs === undefined) throw invalidRequest(`to: must be a date as YYYY-MM-DD, got "${clip(asked.to)}"`)
  const fromMs = asked.from === undefined ? toMs - (DEFAULT_DAYS - 1) * DAY_MS : dayStart(asked.from)
  if (fromMs === undefined)
    throw invalidRequest(`from: must be a date as YYYY-MM-DD, got "${clip(asked.from)}"`)
  if (fromMs > toMs) throw invalidRequest(`from: must not be after to (${utcDay(toMs)})`)
  const days = (toMs - fromMs) / DAY_MS + 1
  if (days > MAX_DAYS)
    throw invalidRequest(`from: the range may span at most ${MAX_DAYS} days (asked for ${days})`)
  return { from: utcDay(fromMs), to: utcDay(toMs) }
}

const clip = (v: string | undefined) => (v ?? '').slice(0, 40)

/**
 * An account's usage over `range` (both ends included; resolveRange checks and defaults a
 * caller's). The dashboard calls this directly; GET /v1/usage wraps it.
 */
export async function readUsage(
  storage: Storage,
  accountId: string,
  range: UsageRange,
): Promise<UsageReport> {
  const [perDay, methods] = await Promise.all([
    usagePerDay(storage.db, accountId, range.from, range.to),
    usagePerMethod(storage.db, accountId, range.to),
  ])
  const byDate = new Map(perDay.map((d) => [d.date, d]))
  const days: UsageDay[] = []
  const last = dayStart(range.to) ?? 0
  for (let ms = dayStart(range.from) ?? last; ms <= last; ms += DAY_MS) {
    const date = utcDay(ms)
    days.push(byDate.get(date) ?? { date, requests: 0, computeUnits: 0, limited: 0 })
  }
  return { from: range.from, to: range.to, days, methodsDate: range.to, methods }
}
