import { type ColumnType, type Insertable, type Selectable, sql } from 'kysely'
import type { DB } from '../storage/database.ts'

/** Tables of migration 0200_request_log and their SQL. */

/** int8: written as a number, read as the decimal string both drivers return. */
type Count = ColumnType<string, number, number>

export interface RequestLogTable {
  account_id: string
  at: Date
  key_id: string
  surface: string
  network: string
  request_id: string
  /** The call's place in its batch (0 for a single call). */
  item: number
  /** Calls in the request; 0 for a single call (not a batch). */
  batch_size: number
  method: string
  http_status: number
  rpc_code: number | null
  error: string | null
  latency_us: number
  compute_units: number
  origin: string | null
  params: string | null
  answer: string | null
}

export interface KeyUsageDailyTable {
  key_id: string
  day: ColumnType<string, string, never>
  method: string
  account_id: string
  calls: Count
  compute_units: Count
  errors: Count
  limited: Count
}

declare module '../storage/schema.ts' {
  interface Database {
    request_log: RequestLogTable
    key_usage_daily: KeyUsageDailyTable
  }
}

export type RequestRow = Insertable<RequestLogTable>
export type StoredRequest = Selectable<RequestLogTable>

/** One (key, day, method) row's counts to add. */
export interface KeyUsageDelta {
  readonly keyId: string
  readonly accountId: string
  readonly day: string
  readonly method: string
  readonly calls: number
  readonly computeUnits: number
  readonly errors: number
  readonly limited: number
}

/** Rows per statement: 17 parameters a row, well under PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 500

/** Inserts kept calls, 500 a statement; returns the rows of statements that failed. */
export async function insertRequests(db: DB, rows: readonly RequestRow[]): Promise<RequestRow[]> {
  const failed: RequestRow[] = []
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + ROWS_PER_STATEMENT)
    try {
      await db.insertInto('request_log').values(chunk).execute()
    } catch (err) {
      failed.push(...chunk)
      if (failed.length === rows.length) throw err
    }
  }
  return failed
}

/**
 * Adds per-key counts (additive upserts: any number of instances may write the same row), in key
 * order so that two instances never deadlock, each statement in its own transaction (see
 * usage/store.ts for why). Throws when the write failed; nothing was then added.
 */
export async function addKeyUsage(db: DB, deltas: readonly KeyUsageDelta[]): Promise<void> {
  if (deltas.length === 0) return
  const sorted = [...deltas].sort(
    (a, b) => cmp(a.keyId, b.keyId) || cmp(a.day, b.day) || cmp(a.method, b.method),
  )
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < sorted.length; i += ROWS_PER_STATEMENT) {
      await trx
        .insertInto('key_usage_daily')
        .values(
          sorted.slice(i, i + ROWS_PER_STATEMENT).map((d) => ({
            key_id: d.keyId,
            day: d.day,
            method: d.method,
            account_id: d.accountId,
            calls: d.calls,
            compute_units: d.computeUnits,
            errors: d.errors,
            limited: d.limited,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['key_id', 'day', 'method']).doUpdateSet({
            calls: sql`key_usage_daily.calls + excluded.calls`,
            compute_units: sql`key_usage_daily.compute_units + excluded.compute_units`,
            errors: sql`key_usage_daily.errors + excluded.errors`,
            limited: sql`key_usage_daily.limited + excluded.limited`,
          }),
        )
        .execute()
    }
  })
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Deletes kept calls older than `before`, at most `limit` rows; how many went. */
export async function pruneRequests(db: DB, before: Date, limit: number): Promise<number> {
  const res = await sql`
    delete from request_log where ctid in (
      select ctid from request_log where at < ${before} limit ${limit}
    )`.execute(db)
  return Number(res.numAffectedRows ?? 0)
}

/** What the explorer filters on; every field optional. */
export interface RequestFilter {
  readonly keyId?: string | undefined
  readonly method?: string | undefined
  /** `ok`, `error` (any JSON-RPC error or HTTP status ≥ 400), an HTTP status, or a JSON-RPC code. */
  readonly status?: string | undefined
  readonly network?: string | undefined
  readonly requestId?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
  /** Only these networks (a test key's view: no mainnet); undefined: all. */
  readonly networks?: readonly string[] | undefined
}

/** An account's kept calls, newest first, `limit` of them, before the `before` cursor when given. */
export async function findRequests(
  db: DB,
  accountId: string,
  f: RequestFilter,
  limit: number,
): Promise<StoredRequest[]> {
  let q = db.selectFrom('request_log').selectAll().where('account_id', '=', accountId)
  if (f.keyId) q = q.where('key_id', '=', f.keyId)
  if (f.method) q = q.where('method', '=', f.method)
  if (f.network) q = q.where('network', '=', f.network)
  if (f.networks)
    q = f.networks.length === 0 ? q.where(sql<boolean>`false`) : q.where('network', 'in', f.networks)
  if (f.requestId) q = q.where('request_id', '=', f.requestId)
  if (f.from) q = q.where('at', '>=', f.from)
  if (f.to) q = q.where('at', '<', f.to)
  const s = f.status
  if (s === 'ok') q = q.where('http_status', '<', 400).where('rpc_code', 'is', null)
  else if (s === 'error')
    q = q.where((e) => e.or([e('http_status', '>=', 400), e('rpc_code', 'is not', null)]))
  else if (s !== undefined && /^[1-5]\d\d$/.test(s)) q = q.where('http_status', '=', Number(s))
  else if (s !== undefined && /^-?\d{1,9}$/.test(s)) q = q.where('rpc_code', '=', Number(s))
  return q.orderBy('at', 'desc').orderBy('request_id').orderBy('item').limit(limit).execute()
}

/** One kept call of an account: by request id and item. */
export function findRequest(
  db: DB,
  accountId: string,
  requestId: string,
  item: number,
): Promise<StoredRequest | undefined> {
  return db
    .selectFrom('request_log')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('request_id', '=', requestId)
    .where('item', '=', item)
    .orderBy('at', 'desc')
    .executeTakeFirst()
}

export interface KeyCounts {
  readonly calls: number
  readonly computeUnits: number
  readonly errors: number
  readonly limited: number
}

const counts = (r: {
  calls: string | null
  compute_units: string | null
  errors: string | null
  limited: string | null
}): KeyCounts => ({
  calls: Number(r.calls ?? 0),
  computeUnits: Number(r.compute_units ?? 0),
  errors: Number(r.errors ?? 0),
  limited: Number(r.limited ?? 0),
})

/** A key's counts per day (days with any) and per method over [from, to] (UTC days, inclusive). */
export async function keyUsage(
  db: DB,
  keyId: string,
  from: string,
  to: string,
): Promise<{ days: (KeyCounts & { date: string })[]; methods: (KeyCounts & { method: string })[] }> {
  const base = db
    .selectFrom('key_usage_daily')
    .where('key_id', '=', keyId)
    .where(sql<boolean>`day between ${from}::date and ${to}::date`)
  const sums = [
    sql<string>`sum(calls)`.as('calls'),
    sql<string>`sum(compute_units)`.as('compute_units'),
    sql<string>`sum(errors)`.as('errors'),
    sql<string>`sum(limited)`.as('limited'),
  ] as const
  const [days, methods] = await Promise.all([
    base
      .select([sql<string>`to_char(day, 'YYYY-MM-DD')`.as('date'), ...sums])
      .groupBy('day')
      .orderBy('day')
      .execute(),
    base
      .select(['method', ...sums])
      .groupBy('method')
      .orderBy(sql`sum(compute_units)`, 'desc')
      .orderBy('method')
      .execute(),
  ])
  return {
    days: days.map((r) => ({ date: r.date, ...counts(r) })),
    methods: methods.map((r) => ({ method: r.method, ...counts(r) })),
  }
}

/** An account's keys' names and display prefixes, by id (the explorer shows keys by name). */
export async function keyNames(
  db: DB,
  accountId: string,
): Promise<Map<string, { name: string | null; prefix: string }>> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'display_prefix'])
    .where('account_id', '=', accountId)
    .execute()
  return new Map(rows.map((r) => [r.id, { name: r.name, prefix: r.display_prefix }]))
}
