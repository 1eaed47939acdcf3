import { type Kysely, sql, type Transaction } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { addDecimal, weiToUsd } from './policy-decimal.ts'
import type { PolicyRow, SponsorshipRow } from './policy-store.ts'
import {
  type AccountMove,
  accountUsage,
  firstOpenExpiry,
  moveAccountTotals,
} from './sponsor-account-totals.ts'

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
  account_id: string
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
    return new Map(rows.map((r) => [r.sender, { spendUsd: r.spend_usd, day: r.day, dayOps: r.day_ops }]))
  }

  /** The account's ceilings and usage on `network` (sponsor-account-totals.ts). */
  accountUsage(db: Trx | Db, accountId: string, network: string, day: string, lock: boolean) {
    return accountUsage(db, accountId, network, day, lock)
  }

  firstOpenExpiry(db: Trx | Db, accountId: string, network: string) {
    return firstOpenExpiry(db, accountId, network)
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
    // Both rows exist and are locked by this transaction (accountUsage): one statement moves both.
    await sql`
      with r as (update gas_account_reserved set reserved_wei = reserved_wei + ${wei.toString()}::numeric
        where account_id = ${policy.account_id} and network = ${policy.chain})
      update gas_account_days set spend_wei = spend_wei + ${wei.toString()}::numeric
      where account_id = ${policy.account_id} and network = ${policy.chain} and day = ${day}`.execute(trx)
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
      await sql`
        update gas_policies set
          ops_count = ops_count + ${wasReserved ? 0 : 1},
          reserved_wei = reserved_wei - ${wasReserved ? chosen.max_cost_wei : '0'}::numeric,
          reserved_usd = reserved_usd - ${wasReserved ? (chosen.max_cost_usd ?? '0') : '0'}::numeric,
          settled_ops = settled_ops + 1,
          settled_wei = settled_wei + ${e.actualGasCost.toString()}::numeric,
          settled_usd = settled_usd + ${actualUsd ?? '0'}::numeric
        where id = ${chosen.policy_id}`.execute(trx)
      await sql`
        update gas_policy_senders set
          ops_count = ops_count + ${wasReserved ? 0 : 1},
          spend_usd = spend_usd + ${actualUsd ?? '0'}::numeric - ${wasReserved ? (chosen.max_cost_usd ?? '0') : '0'}::numeric,
          day_ops = day_ops + case when day = ${chosen.day} then ${wasReserved ? 0 : 1} else 0 end
        where policy_id = ${chosen.policy_id} and sender = ${chosen.sender}`.execute(trx)
      const others = rows.filter((r) => r.id !== chosen.id && r.state === 'reserved')
      const moves = await this.releaseRows(trx, others)
      const max = wasReserved ? BigInt(chosen.max_cost_wei) : 0n
      moves.push({
        accountId: chosen.account_id,
        network: chosen.network,
        day: chosen.day,
        reservedWei: -max,
        dayWei: e.actualGasCost - max,
      })
      // Account rows after every policy row: the order the deciding transaction locks them in.
      await moveAccountTotals(trx, moves)
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
      await moveAccountTotals(trx, await this.releaseRows(trx, rows))
      return rows.length
    })
  }

  /** Releases `rows`; returns what their accounts' totals give back (moveAccountTotals). */
  private async releaseRows(trx: Trx, rows: readonly SponsorshipRow[]): Promise<AccountMove[]> {
    const moves = rows.map((r) => ({
      accountId: r.account_id,
      network: r.network,
      day: r.day,
      reservedWei: -BigInt(r.max_cost_wei),
      dayWei: -BigInt(r.max_cost_wei),
    }))
    if (rows.length === 0) return moves
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
      await sql`
        update gas_policies set ops_count = ops_count - ${list.length},
          reserved_wei = reserved_wei - ${wei.toString()}::numeric,
          reserved_usd = reserved_usd - ${usd}::numeric
        where id = ${policyId}`.execute(trx)
      for (const r of [...list].sort((a, b) => (a.sender < b.sender ? -1 : 1)))
        await sql`
          update gas_policy_senders set ops_count = ops_count - 1,
            spend_usd = spend_usd - ${r.max_cost_usd ?? '0'}::numeric,
            day_ops = day_ops - case when day = ${r.day} then 1 else 0 end
          where policy_id = ${policyId} and sender = ${r.sender}`.execute(trx)
    }
    return moves
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
