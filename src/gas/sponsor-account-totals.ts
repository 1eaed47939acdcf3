import { type Kysely, sql, type Transaction } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { AccountUsage } from './sponsor-ceilings.ts'

/**
 * SQL of the operator's ceilings (sponsor-ceilings.ts): an account's open reservations and its
 * spend per UTC day on each network (migration 0134), read and locked by the deciding
 * transaction and moved by settlement and release (sponsor-store.ts).
 */

type Db = Kysely<Database>
type Trx = Transaction<Database>

/** What reservations add to (or give back from) an account's totals. */
export interface AccountMove {
  accountId: string | null
  network: string
  day: string
  reservedWei: bigint
  dayWei: bigint
}

/**
 * The account's ceilings and usage on `network` (sponsor-ceilings.ts). With `lock`, the
 * account's reserved row, then its day row, are upserted first: their row locks queue every
 * decision of the account on the network, across its policies, until the transaction ends
 * (each policy's own lock covers only that policy). Without it (the ERC-7677 stub's early
 * answer) nothing is written.
 */
export async function accountUsage(
  db: Trx | Db,
  accountId: string,
  network: string,
  day: string,
  lock: boolean,
): Promise<AccountUsage> {
  const open = lock
    ? await sql<{ reserved_wei: string }>`
          insert into gas_account_reserved (account_id, network, reserved_wei) values (${accountId}, ${network}, 0)
          on conflict (account_id, network) do update set reserved_wei = gas_account_reserved.reserved_wei
          returning reserved_wei::text as reserved_wei`.execute(db)
    : await sql<{ reserved_wei: string }>`
          select reserved_wei::text as reserved_wei from gas_account_reserved
          where account_id = ${accountId} and network = ${network}`.execute(db)
  // The day row (locked after the reserved row) and the plan and overrides in one statement.
  const day_ = lock
    ? sql`(insert into gas_account_days (account_id, network, day, spend_wei)
          values (${accountId}, ${network}, ${day}, 0)
          on conflict (account_id, network, day) do update set spend_wei = gas_account_days.spend_wei
          returning spend_wei)`
    : sql`(select spend_wei from gas_account_days
          where account_id = ${accountId} and network = ${network} and day = ${day})`
  const { rows } = await sql<{
    spend: string | null
    plan: string | null
    op: string | null
    per_day: string | null
    at_once: string | null
  }>`
      with d as ${day_}
      select (select spend_wei::text from d) as spend, (select plan from accounts where id = ${accountId}) as plan,
        c.per_operation_wei::text as op, c.per_day_wei::text as per_day, c.reserved_wei::text as at_once
      from (select 1) as one
      left join gas_account_ceilings c on c.account_id = ${accountId} and c.network = ${network}`.execute(db)
  const r = rows[0]
  const big = (v: string | null | undefined) => (v === null || v === undefined ? null : BigInt(v))
  return {
    accountId,
    plan: r?.plan ?? 'free',
    overrides: {
      perOperationWei: big(r?.op),
      perDayWei: big(r?.per_day),
      reservedAtOnceWei: big(r?.at_once),
    },
    dayWei: BigInt(r?.spend ?? '0'),
    reservedWei: BigInt(open.rows[0]?.reserved_wei ?? '0'),
  }
}

/** Unix seconds when the account's first open reservation on `network` expires (null: none). */
export async function firstOpenExpiry(
  db: Trx | Db,
  accountId: string,
  network: string,
): Promise<number | null> {
  const { rows } = await sql<{ until: string | null }>`
      select min(valid_until)::text as until from gas_sponsorships
      where network = ${network} and state = 'reserved' and account_id = ${accountId}`.execute(db)
  const until = rows[0]?.until
  return until === null || until === undefined ? null : Number(until)
}

/**
 * Moves accounts' totals by what reservations added or gave back: each account's reserved row,
 * then its day rows, in key order (the order the deciding transaction locks them in). Rows
 * written before migration 0134 carry no account and were never counted.
 */
export async function moveAccountTotals(trx: Trx, moves: readonly AccountMove[]): Promise<void> {
  const reserved = new Map<string, bigint>()
  const days = new Map<string, bigint>()
  for (const m of moves) {
    if (m.accountId === null) continue
    const acct = JSON.stringify([m.accountId, m.network])
    reserved.set(acct, (reserved.get(acct) ?? 0n) + m.reservedWei)
    const day = JSON.stringify([m.accountId, m.network, m.day])
    days.set(day, (days.get(day) ?? 0n) + m.dayWei)
  }
  for (const acct of [...reserved.keys()].sort()) {
    const [accountId, network] = JSON.parse(acct) as [string, string]
    const delta = (reserved.get(acct) ?? 0n).toString()
    await sql`
        insert into gas_account_reserved (account_id, network, reserved_wei)
        values (${accountId}, ${network}, greatest(${delta}::numeric, 0))
        on conflict (account_id, network) do update
          set reserved_wei = greatest(gas_account_reserved.reserved_wei + ${delta}::numeric, 0)`.execute(trx)
    for (const key of [...days.keys()].sort()) {
      const [a, n, day] = JSON.parse(key) as [string, string, string]
      if (a !== accountId || n !== network) continue
      const d = (days.get(key) ?? 0n).toString()
      await sql`
          insert into gas_account_days (account_id, network, day, spend_wei)
          values (${a}, ${n}, ${day}, greatest(${d}::numeric, 0))
          on conflict (account_id, network, day) do update
            set spend_wei = greatest(gas_account_days.spend_wei + ${d}::numeric, 0)`.execute(trx)
    }
  }
}
