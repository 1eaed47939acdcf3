import { type ColumnType, sql } from 'kysely'
import type { DB } from '../storage/database.ts'

/** Table of migration 0070_usage and its SQL. */

/** int8: written as a number, read as the decimal string both drivers return. */
type Count = ColumnType<string, number, number>

export interface UsageDailyTable {
  account_id: string
  /** A `date`: written as YYYY-MM-DD, read back through to_char. */
  day: ColumnType<string, string, never>
  method: string
  requests: Count
  compute_units: Count
  limited: Count
}

export interface UsageTables {
  usage_daily: UsageDailyTable
}

declare module '../storage/schema.ts' {
  interface Database extends UsageTables {}
}

/** One (account, day, method) row's counts to add. */
export interface UsageDelta {
  readonly accountId: string
  /** UTC day, YYYY-MM-DD. */
  readonly day: string
  readonly method: string
  readonly requests: number
  readonly computeUnits: number
  readonly limited: number
}

export interface UsageCounts {
  readonly requests: number
  readonly computeUnits: number
  readonly limited: number
}

/** Rows per statement: well under PostgreSQL's 65,535 bind parameters (6 per row). */
const ROWS_PER_STATEMENT = 1_000

/**
 * Adds deltas to their rows, creating missing ones: one statement per 1,000 rows, each atomic.
 * Additive (`requests = usage_daily.requests + excluded.requests`), so instances writing the
 * same row concurrently both count. Rows go in key order, so two instances flushing overlapping
 * rows lock them in the same order and never deadlock. Deltas must have distinct keys (one
 * statement may not update a row twice). Returns the deltas of statements that failed.
 */
export async function addUsage(
  db: DB,
  deltas: readonly UsageDelta[],
): Promise<{ failed: UsageDelta[]; error?: unknown }> {
  const sorted = [...deltas].sort(compareKeys)
  const failed: UsageDelta[] = []
  let error: unknown
  for (let i = 0; i < sorted.length; i += ROWS_PER_STATEMENT) {
    const chunk = sorted.slice(i, i + ROWS_PER_STATEMENT)
    try {
      // Its own transaction rather than a lone statement: a statement whose answer is lost (the
      // database deadline cut the connection while the server was frozen) may still run when the
      // server wakes, and the chunk, kept for the next flush, would count twice. Inside a
      // transaction it runs, then finds no COMMIT on a closed connection and rolls back; only a
      // deadline during the COMMIT itself stays ambiguous.
      await db.transaction().execute((trx) =>
        trx
          .insertInto('usage_daily')
          .values(
            chunk.map((d) => ({
              account_id: d.accountId,
              day: d.day,
              method: d.method,
              requests: d.requests,
              compute_units: d.computeUnits,
              limited: d.limited,
            })),
          )
          .onConflict((oc) =>
            oc.columns(['account_id', 'day', 'method']).doUpdateSet({
              requests: sql`usage_daily.requests + excluded.requests`,
              compute_units: sql`usage_daily.compute_units + excluded.compute_units`,
              limited: sql`usage_daily.limited + excluded.limited`,
            }),
          )
          .execute(),
      )
    } catch (err) {
      failed.push(...chunk)
      error = err
    }
  }
  return error === undefined ? { failed } : { failed, error }
}

function compareKeys(a: UsageDelta, b: UsageDelta): number {
  return cmp(a.accountId, b.accountId) || cmp(a.day, b.day) || cmp(a.method, b.method)
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const counts = (r: { requests: string | null; compute_units: string | null; limited: string | null }) => ({
  requests: Number(r.requests ?? 0),
  computeUnits: Number(r.compute_units ?? 0),
  limited: Number(r.limited ?? 0),
})

/** Totals per day with any usage in [from, to] (inclusive), in day order. */
export async function usagePerDay(
  db: DB,
  accountId: string,
  from: string,
  to: string,
): Promise<(UsageCounts & { date: string })[]> {
  const rows = await db
    .selectFrom('usage_daily')
    .select([
      sql<string>`to_char(day, 'YYYY-MM-DD')`.as('date'),
      sql<string>`sum(requests)`.as('requests'),
      sql<string>`sum(compute_units)`.as('compute_units'),
      sql<string>`sum(limited)`.as('limited'),
    ])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`day between ${from}::date and ${to}::date`)
    .groupBy('day')
    .orderBy('day')
    .execute()
  return rows.map((r) => ({ date: r.date, ...counts(r) }))
}

/** One day's rows per method, heaviest (compute units, then requests) first. */
export async function usagePerMethod(
  db: DB,
  accountId: string,
  day: string,
): Promise<(UsageCounts & { method: string })[]> {
  const rows = await db
    .selectFrom('usage_daily')
    .select(['method', 'requests', 'compute_units', 'limited'])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`day = ${day}::date`)
    .orderBy('compute_units', 'desc')
    .orderBy('requests', 'desc')
    .orderBy('method')
    .execute()
  return rows.map((r) => ({ method: r.method, ...counts(r) }))
}
