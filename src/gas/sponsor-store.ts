import { type Kysely, sql, type Transaction } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { addDecimal, weiToUsd } from './policy-decimal.ts'
import type { PolicyRow, SponsorshipRow } from './policy-store.ts'
import type { AccountUsage } from './sponsor-ceilings.ts'

/**
 * SQL of the spend accounting: the reservation a signature makes (inside the deciding
 * transaction, see sponsor-reserve.ts), its settlement from `UserOperationEvent` and its release
 * once the signature has expired unused, each moving the policy's and the sender's running
 * totals in the same transaction as the reservation row.
 */

type Db = Kysely<Database>
export type Trx = Transaction<Database>

export interface NewReservation {
  id: string
  policy_id: string
  network: string
  entry_point: Address
  paymaster: Address
  sender: Address
  nonce: bigint
  max_cost_wei: bigint
  max_cost_usd: string | null
  native_price_usd: string | null
  valid_until: number
  valid_after: number
  day: string
  created_at: Date
}

export interface SenderTotals {
  spendUsd: string
  day: string
  dayOps: number
}

/** A `UserOperationEvent` whose paymaster is ours. */
export interface SponsoredOpEvent {
  network: string
  entryPoint: Address
  paymaster: Address
  sender: Address
  nonce: bigint
  userOpHash: Hash
  success: boolean
  actualGasCost: bigint
  transactionHash: Hash
  blockNumber: bigint
  /** The mined op's signed validAfter (from the bundle's calldata), when it could be read. */
  validAfter: number | null
}

export type SettleResult = 'settled' | 'already-settled' | 'unknown'

export class SponsorStore {
  constructor(readonly db: Db) {}

  transaction<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn)
  }

  /** The policy row, locked until the transaction ends: every decision on it queues here. */
  lockPolicy(trx: Trx, id: string): Promise<PolicyRow | undefined> {
    return trx.selectFrom('gas_policies').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
  }

  async senders(
    trx: Trx | Db,
    policyId: string,
    senders: readonly Address[],
  ): Promise<Map<Address, SenderTotals>> {
    const rows = await trx
      .selectFrom('gas_policy_senders')
      .select(['sender', 'spend_usd', 'day', 'day_ops'])
      .where('policy_id', '=', policyId)
      .where('sender', 'in', senders)
      .execute()
    return new Map(
      rows.map((r) => [r.sender as Address, { spendUsd: r.spend_usd, day: r.day, dayOps: r.day_ops }]),
    )
  }

  /**
   * The account's ceilings and usage on `network` (sponsor-ceilings.ts). With `lock`, the
   * account's day row is upserted first: its row lock queues every decision of the account on
   * the network, across its policies, until the transaction ends (each policy's own lock covers
   * only that policy). Without it (the ERC-7677 stub's early answer) nothing is written.
   */
  async accountUsage(
    db: Trx | Db,
    accountId: string,
    network: string,
    day: string,
    lock: boolean,
  ): Promise<AccountUsage> {
    const dayRow = lock
      ? await sql<{ spend_wei: string }>`
          insert into gas_account_days (account_id, network, day, spend_wei) values (${accountId}, ${network}, ${day}, 0)
          on conflict (account_id, network, day) do update set spend_wei = gas_account_days.spend_wei
          returning spend_wei::text as spend_wei`.execute(db)
      : await sql<{ spend_wei: string }>`
          select spend_wei::text as spend_wei from gas_account_days
          where account_id = ${accountId} and network = ${network} and day = ${day}`.execute(db)
    // Read after the lock: in READ COMMITTED each statement sees what committed before it began.
    const { rows } = await sql<{
      plan: string | null
      reserved: string
      op: string | null
      per_day: string | null
      at_once: string | null
    }>`
      select (select plan from accounts where id = ${accountId}) as plan,
        (select coalesce(sum(reserved_wei), 0)::text from gas_policies
          where account_id = ${accountId} and chain = ${network}) as reserved,
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
      dayWei: BigInt(dayRow.rows[0]?.spend_wei ?? '0'),
      reservedWei: BigInt(r?.reserved ?? '0'),
    }
  }

  /** Unix seconds when the account's first open reservation on `network` expires (null: none). */
  async firstOpenExpiry(db: Trx | Db, accountId: string, network: string): Promise<number | null> {
    const { rows } = await sql<{ until: string | null }>`
      select min(s.valid_until)::text as until from gas_sponsorships s
      join gas_policies p on p.id = s.policy_id
      where p.account_id = ${accountId} and p.chain = ${network} and s.network = ${network}
        and s.state = 'reserved'`.execute(db)
    const until = rows[0]?.until
    return until === null || until === undefined ? null : Number(until)
  }

  /** Moves an account's day total (under the day row's lock; rows locked in key order). */
  private async addDaySpend(trx: Trx, deltas: Map<string, bigint>): Promise<void> {
    for (const key of [...deltas.keys()].sort()) {
      const delta = deltas.get(key) ?? 0n
      if (delta === 0n) continue
      const [accountId, network, day] = JSON.parse(key) as [string, string, string]
      await sql`
        insert into gas_account_days (account_id, network, day, spend_wei)
        values (${accountId}, ${network}, ${day}, greatest(${delta.toString()}::numeric, 0))
        on conflict (account_id, network, day) do update
          set spend_wei = greatest(gas_account_days.spend_wei + ${delta.toString()}::numeric, 0)`.execute(trx)
    }
  }

  /** Writes the reservations and adds them to the policy's and senders' totals. */
  async reserve(
    trx: Trx,
    policy: Pick<PolicyRow, 'id' | 'account_id' | 'chain'>,
    day: string,
    rows: readonly NewReservation[],
    rateWindow: number | null,
  ): Promise<void> {
    if (rows.length === 0) return
    const policyId = policy.id
    await trx
      .insertInto('gas_sponsorships')
      .values(
        rows.map((r) => ({
          ...r,
          nonce: r.nonce.toString(),
          max_cost_wei: r.max_cost_wei.toString(),
          valid_until: String(r.valid_until),
          valid_after: String(r.valid_after),
          state: 'reserved' as const,
        })),
      )
      .execute()
    let wei = 0n
    let usd = '0'
    const perSender = new Map<Address, { ops: number; usd: string }>()
    for (const r of rows) {
      wei += r.max_cost_wei
      usd = addDecimal(usd, r.max_cost_usd ?? '0')
      const s = perSender.get(r.sender) ?? { ops: 0, usd: '0' }
      perSender.set(r.sender, { ops: s.ops + 1, usd: addDecimal(s.usd, r.max_cost_usd ?? '0') })
    }
    await sql`
      update gas_policies set ops_count = ops_count + ${rows.length},
        reserved_wei = reserved_wei + ${wei.toString()}::numeric,
        reserved_usd = reserved_usd + ${usd}::numeric,
        rate_window_count = case when ${rateWindow === null}::boolean then rate_window_count
          when rate_window_start = ${rateWindow ?? 0} then rate_window_count + ${rows.length}
          else ${rows.length} end,
        rate_window_start = coalesce(${rateWindow}, rate_window_start)
      where id = ${policyId}`.execute(trx)
    const values = [...perSender.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([sender, s]) => sql`(${policyId}, ${sender}, ${s.ops}, ${s.usd}::numeric, ${day}, ${s.ops})`)
    await sql`
      insert into gas_policy_senders (policy_id, sender, ops_count, spend_usd, day, day_ops)
      values ${sql.join(values)}
      on conflict (policy_id, sender) do update set
        ops_count = gas_policy_senders.ops_count + excluded.ops_count,
        spend_usd = gas_policy_senders.spend_usd + excluded.spend_usd,
        day_ops = case when gas_policy_senders.day = excluded.day
          then gas_policy_senders.day_ops + excluded.day_ops else excluded.day_ops end,
        day = excluded.day`.execute(trx)
    await this.addDaySpend(trx, new Map([[JSON.stringify([policy.account_id, policy.chain, day]), wei]]))
  }

  /**
   * Settles the reservation an event pays for, to its actual cost (at the price of signing): the
   * one whose validAfter the mined op carries, else the newest open one. The other reservations
   * of the same sender and nonce are released: that nonce is used. Idempotent: an event seen
   * twice settles once.
   */
  async settle(e: SponsoredOpEvent): Promise<SettleResult> {
    return this.transaction(async (trx) => {
      const rows = await trx
        .selectFrom('gas_sponsorships')
        .selectAll()
        .where('network', '=', e.network)
        .where('entry_point', '=', e.entryPoint)
        .where('sender', '=', e.sender)
        .where('nonce', '=', e.nonce.toString())
        .where('paymaster', '=', e.paymaster)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .forUpdate()
        .execute()
      if (rows.some((r) => r.state === 'settled')) return 'already-settled'
      const chosen =
        rows.find((r) => e.validAfter !== null && Number(r.valid_after) === e.validAfter) ??
        rows.find((r) => r.state === 'reserved') ??
        rows[0]
      if (!chosen) return 'unknown'
      const actualUsd = chosen.native_price_usd ? weiToUsd(e.actualGasCost, chosen.native_price_usd) : null
      await trx
        .updateTable('gas_sponsorships')
        .set({
          state: 'settled',
          actual_cost_wei: e.actualGasCost.toString(),
          actual_cost_usd: actualUsd,
          user_op_hash: e.userOpHash,
          tx_hash: e.transactionHash,
          block_number: e.blockNumber.toString(),
          success: e.success,
          updated_at: new Date(),
        })
        .where('id', '=', chosen.id)
        .execute()
      const wasReserved = chosen.state === 'reserved'
      const updated = await sql<{ account_id: string; chain: string }>`
        update gas_policies set
          ops_count = ops_count + ${wasReserved ? 0 : 1},
          reserved_wei = reserved_wei - ${wasReserved ? chosen.max_cost_wei : '0'}::numeric,
          reserved_usd = reserved_usd - ${wasReserved ? (chosen.max_cost_usd ?? '0') : '0'}::numeric,
          settled_ops = settled_ops + 1,
          settled_wei = settled_wei + ${e.actualGasCost.toString()}::numeric,
          settled_usd = settled_usd + ${actualUsd ?? '0'}::numeric
        where id = ${chosen.policy_id}
        returning account_id, chain`.execute(trx)
      await sql`
        update gas_policy_senders set
          ops_count = ops_count + ${wasReserved ? 0 : 1},
          spend_usd = spend_usd + ${actualUsd ?? '0'}::numeric - ${wasReserved ? (chosen.max_cost_usd ?? '0') : '0'}::numeric,
          day_ops = day_ops + case when day = ${chosen.day} then ${wasReserved ? 0 : 1} else 0 end
        where policy_id = ${chosen.policy_id} and sender = ${chosen.sender}`.execute(trx)
      const others = rows.filter((r) => r.id !== chosen.id && r.state === 'reserved')
      const deltas = await this.releaseRows(trx, others)
      const owner = updated.rows[0]
      if (owner) {
        const key = JSON.stringify([owner.account_id, owner.chain, chosen.day])
        const delta = e.actualGasCost - (wasReserved ? BigInt(chosen.max_cost_wei) : 0n)
        deltas.set(key, (deltas.get(key) ?? 0n) + delta)
      }
      // Day rows after every policy row: the order the deciding transaction locks them in.
      await this.addDaySpend(trx, deltas)
      return 'settled'
    })
  }

  /**
   * Releases reservations of `network` whose signature expired before `beforeUnix` (seconds):
   * from then on no block can include them. Returns how many were released.
   */
  async releaseExpired(network: string, beforeUnix: number): Promise<number> {
    return this.transaction(async (trx) => {
      const rows = await trx
        .selectFrom('gas_sponsorships')
        .selectAll()
        .where('network', '=', network)
        .where('state', '=', 'reserved')
        .where('valid_until', '<', String(beforeUnix))
        .orderBy('id')
        .forUpdate()
        .skipLocked()
        .execute()
      await this.addDaySpend(trx, await this.releaseRows(trx, rows))
      return rows.length
    })
  }

  /** Releases `rows`; returns the accounts' day totals to take their maxima out of. */
  private async releaseRows(trx: Trx, rows: readonly SponsorshipRow[]): Promise<Map<string, bigint>> {
    const deltas = new Map<string, bigint>()
    if (rows.length === 0) return deltas
    await trx
      .updateTable('gas_sponsorships')
      .set({ state: 'released', updated_at: new Date() })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute()
    // Counters by policy (id order, so two releasing transactions lock policies alike).
    const byPolicy = new Map<string, SponsorshipRow[]>()
    for (const r of rows) byPolicy.set(r.policy_id, [...(byPolicy.get(r.policy_id) ?? []), r])
    for (const policyId of [...byPolicy.keys()].sort()) {
      const list = byPolicy.get(policyId) ?? []
      let wei = 0n
      let usd = '0'
      for (const r of list) {
        wei += BigInt(r.max_cost_wei)
        usd = addDecimal(usd, r.max_cost_usd ?? '0')
      }
      const owner = await sql<{ account_id: string; chain: string }>`
        update gas_policies set ops_count = ops_count - ${list.length},
          reserved_wei = reserved_wei - ${wei.toString()}::numeric,
          reserved_usd = reserved_usd - ${usd}::numeric
        where id = ${policyId}
        returning account_id, chain`.execute(trx)
      const o = owner.rows[0]
      if (o)
        for (const r of list) {
          const key = JSON.stringify([o.account_id, o.chain, r.day])
          deltas.set(key, (deltas.get(key) ?? 0n) - BigInt(r.max_cost_wei))
        }
      for (const r of [...list].sort((a, b) => (a.sender < b.sender ? -1 : 1)))
        await sql`
          update gas_policy_senders set ops_count = ops_count - 1,
            spend_usd = spend_usd - ${r.max_cost_usd ?? '0'}::numeric,
            day_ops = day_ops - case when day = ${r.day} then 1 else 0 end
          where policy_id = ${policyId} and sender = ${r.sender}`.execute(trx)
    }
    return deltas
  }

  sponsorship(id: string): Promise<SponsorshipRow | undefined> {
    return this.db.selectFrom('gas_sponsorships').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async cursor(network: string): Promise<{ block: bigint; timestamp: number } | null> {
    const r = await this.db
      .selectFrom('gas_sponsor_cursors')
      .select(['block_number', 'block_timestamp'])
      .where('network', '=', network)
      .executeTakeFirst()
    return r ? { block: BigInt(r.block_number), timestamp: Number(r.block_timestamp) } : null
  }

  async setCursor(network: string, block: bigint, timestamp: number): Promise<void> {
    await this.db
      .insertInto('gas_sponsor_cursors')
      .values({ network, block_number: block.toString(), block_timestamp: String(timestamp) })
      .onConflict((oc) =>
        oc.column('network').doUpdateSet({
          block_number: block.toString(),
          block_timestamp: String(timestamp),
          updated_at: new Date(),
        }),
      )
      .execute()
  }
}
