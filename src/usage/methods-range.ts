import { sql } from 'kysely'
import type { DB } from '../storage/database.ts'

/**
 * Compute units and requests per method summed over [from, to] (UTC days, inclusive), most CU
 * first: the dashboard's per-method chart over the range the account holder picked.
 */
export async function usagePerMethodOver(
  db: DB,
  accountId: string,
  from: string,
  to: string,
  limit: number,
): Promise<Array<{ method: string; requests: number; computeUnits: number }>> {
  const rows = await db
    .selectFrom('usage_daily')
    .select([
      'method',
      sql<string>`sum(requests)`.as('requests'),
      sql<string>`sum(compute_units)`.as('compute_units'),
    ])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`day between ${from}::date and ${to}::date`)
    .groupBy('method')
    .orderBy(sql`sum(compute_units)`, 'desc')
    .orderBy(sql`sum(requests)`, 'desc')
    .orderBy('method')
    .limit(limit)
    .execute()
  return rows.map((r) => ({
    method: r.method,
    requests: Number(r.requests ?? 0),
    computeUnits: Number(r.compute_units ?? 0),
  }))
}
