import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'

type Db = Kysely<Database>

/** An account's share of one block's events, and what its plan allows per day. */
export interface QuotaCharge {
  accountId: string
  /** Events this block produced for the account. */
  events: number
}

/**
 * Adds `charges` to the accounts' usage of `day` and says how many of each account's events
 * still fit its quota (accounts absent from the answer are unlimited). Runs in the indexer's
 * transaction: the count commits or rolls back with the events. The upsert's row lock
 * serialises two transactions charging the same account, so their counts never interleave.
 */
export async function chargeQuota(
  trx: Db,
  day: string,
  charges: readonly QuotaCharge[],
  quotaOf: (plan: string) => number | null,
  /** The accounts' plans when already read (accountPlans, before the transaction). */
  known?: ReadonlyMap<string, string>,
): Promise<Map<string, { allowed: number; plan: string; quota: number }>> {
  const out = new Map<string, { allowed: number; plan: string; quota: number }>()
  if (charges.length === 0) return out
  const planOf =
    known ??
    (await accountPlans(
      trx,
      charges.map((c) => c.accountId),
    ))
  const limited = charges.flatMap((c) => {
    const plan = planOf.get(c.accountId) ?? 'free'
    const quota = quotaOf(plan)
    return quota === null ? [] : [{ ...c, plan, quota }]
  })
  if (limited.length === 0) return out
  const result = await sql<{ account_id: string; used: string }>`
    insert into webhook_quota_usage (account_id, day, used)
    select a, ${day}::date, n from unnest(${limited.map((c) => c.accountId)}::text[], ${limited.map((c) => c.events)}::bigint[]) as v(a, n)
    on conflict (account_id, day) do update set used = webhook_quota_usage.used + excluded.used
    returning account_id, used::text`.execute(trx)
  const used = new Map(result.rows.map((r) => [r.account_id, Number(r.used)]))
  for (const c of limited) {
    const before = (used.get(c.accountId) ?? c.events) - c.events
    out.set(c.accountId, {
      allowed: Math.max(0, Math.min(c.events, c.quota - before)),
      plan: c.plan,
      quota: c.quota,
    })
  }
  return out
}

/** Over-quota events get a line in the delivery history (attempt 0, nothing sent). */
export async function recordOverQuota(
  trx: Db,
  events: ReadonlyArray<{ id: string; webhook_id: string; reason: string }>,
): Promise<void> {
  for (let i = 0; i < events.length; i += 2000) {
    const chunk = events.slice(i, i + 2000)
    await sql`
      insert into webhook_attempts (event_id, webhook_id, attempt, status_code, error, duration_ms)
      select e, w, 0, null, r, 0 from unnest(
        ${chunk.map((e) => e.id)}::text[], ${chunk.map((e) => e.webhook_id)}::text[], ${chunk.map((e) => e.reason)}::text[]
      ) as v(e, w, r)`.execute(trx)
  }
}

/** The plans of these accounts (an account whose row is gone is absent: the free plan's quota). */
export async function accountPlans(db: Db, accountIds: readonly string[]): Promise<Map<string, string>> {
  if (accountIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('accounts')
    .select(['id', 'plan'])
    .where('id', 'in', [...accountIds])
    .execute()
  return new Map(rows.map((p) => [p.id, p.plan]))
}

/** How many webhooks an account has (the per-account cap). */
export async function countWebhooks(db: Db, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The account's plan ('free' when the account row is gone). */
export async function accountPlan(db: Db, accountId: string): Promise<string> {
  const row = await db.selectFrom('accounts').select('plan').where('id', '=', accountId).executeTakeFirst()
  return row?.plan ?? 'free'
}

/** Undelivered events whose last try could not decrypt the signing secret (sender.ts UNDECRYPTABLE). */
export async function undecryptableBacklog(db: Db): Promise<number> {
  const row = await db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('status', 'in', ['pending', 'sending'])
    .where('last_error', 'like', 'secret:%')
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
