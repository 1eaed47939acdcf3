import type { ColumnType, Generated, Kysely, Selectable } from 'kysely'
import type { Viewer } from '../http/access.ts'
import { inList } from '../storage/filters.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'

/** Tables of migration 0060_sponsorship and the policies' CRUD SQL (reservations: sponsor-store.ts). */

type Numeric = ColumnType<string, string | undefined, string>

export interface GasPoliciesTable {
  id: string
  seq: Generated<string>
  account_id: string
  name: string
  chain: string
  /** jsonb: written as JSON text, read as the parsed object. */
  rules: ColumnType<unknown, string, string>
  status: string
  ops_count: Numeric
  reserved_wei: Numeric
  reserved_usd: Numeric
  settled_ops: Numeric
  settled_wei: Numeric
  settled_usd: Numeric
  rate_window_start: Numeric
  rate_window_count: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface GasPolicySendersTable {
  policy_id: string
  sender: Address
  ops_count: Numeric
  spend_usd: Numeric
  /** UTC day (YYYY-MM-DD) `day_ops` counts. */
  day: string
  day_ops: number
}

export interface GasSponsorshipsTable {
  id: string
  policy_id: string
  /** Migration 0134: the policy's account (null on rows written before it). */
  account_id: ColumnType<string | null, string | null | undefined, string | null>
  network: string
  entry_point: Address
  paymaster: Address
  sender: Address
  nonce: string
  max_cost_wei: string
  max_cost_usd: string | null
  native_price_usd: string | null
  valid_until: string
  /** Signed as the paymaster data's validAfter: tells apart two signatures for one op. */
  valid_after: string
  day: string
  state: 'reserved' | 'settled' | 'released'
  actual_cost_wei: string | null
  actual_cost_usd: string | null
  user_op_hash: Hash | null
  tx_hash: Hash | null
  block_number: string | null
  success: boolean | null
  created_at: Date
  updated_at: Generated<Date>
}

export interface GasSponsorCursorsTable {
  network: string
  block_number: string
  block_timestamp: string
  updated_at: Generated<Date>
}

/** Migration 0134: what an account sponsored per network and UTC day (sponsor-ceilings.ts). */
export interface GasAccountDaysTable {
  account_id: string
  network: string
  day: string
  spend_wei: Numeric
}

/** Migration 0134: an account's open reservations per network (sponsor-ceilings.ts). */
export interface GasAccountReservedTable {
  account_id: string
  network: string
  reserved_wei: Numeric
}

/** Migration 0134: per-account ceilings in wei; null = the plan's (set by the operator in SQL). */
export interface GasAccountCeilingsTable {
  account_id: string
  network: string
  per_operation_wei: string | null
  per_day_wei: string | null
  reserved_wei: string | null
}

export interface SponsorshipTables {
  gas_policies: GasPoliciesTable
  gas_policy_senders: GasPolicySendersTable
  gas_sponsorships: GasSponsorshipsTable
  gas_sponsor_cursors: GasSponsorCursorsTable
  gas_account_days: GasAccountDaysTable
  gas_account_reserved: GasAccountReservedTable
  gas_account_ceilings: GasAccountCeilingsTable
}

declare module '../storage/schema.ts' {
  interface Database extends SponsorshipTables {}
}

export type PolicyRow = Selectable<GasPoliciesTable>
export type SponsorshipRow = Selectable<GasSponsorshipsTable>

type Db = Kysely<Database>

export class PolicyStore {
  constructor(private readonly db: Db) {}

  insert(row: {
    id: string
    account_id: string
    name: string
    chain: string
    rules: string
    status: string
  }) {
    return this.db.insertInto('gas_policies').values(row).returningAll().executeTakeFirstOrThrow()
  }

  /** The policy `id` if `viewer` sees it: its account's, on a network it may see. */
  get(viewer: Viewer, id: string): Promise<PolicyRow | undefined> {
    let q = this.db
      .selectFrom('gas_policies')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', viewer.accountId)
    if (viewer.networks) q = q.where(inList('chain', viewer.networks))
    return q.executeTakeFirst()
  }

  async list(viewer: Viewer, limit: number, offset: number): Promise<{ rows: PolicyRow[]; total: number }> {
    let q = this.db.selectFrom('gas_policies').where('account_id', '=', viewer.accountId)
    if (viewer.networks) q = q.where(inList('chain', viewer.networks))
    const [rows, count] = await Promise.all([
      q.selectAll().orderBy('seq').limit(limit).offset(offset).execute(),
      q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
    ])
    return { rows, total: Number(count.n) }
  }

  /** Undefined when `viewer` does not see the policy (or a concurrent DELETE won). */
  update(
    viewer: Viewer,
    id: string,
    patch: { name?: string; rules?: string; status?: string },
  ): Promise<PolicyRow | undefined> {
    let q = this.db
      .updateTable('gas_policies')
      .set({ ...patch, updated_at: new Date() })
      .where('id', '=', id)
      .where('account_id', '=', viewer.accountId)
    if (viewer.networks) q = q.where(inList('chain', viewer.networks))
    return q.returningAll().executeTakeFirst()
  }

  /**
   * Removes the policy and its counters. Its signature rows stay: an op signed before the delete
   * may still be mined, and what the paymaster paid is history.
   */
  async delete(viewer: Viewer, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      let q = trx.deleteFrom('gas_policies').where('id', '=', id).where('account_id', '=', viewer.accountId)
      if (viewer.networks) q = q.where(inList('chain', viewer.networks))
      const gone = await q.executeTakeFirst()
      if (gone.numDeletedRows === 0n) return false
      await trx.deleteFrom('gas_policy_senders').where('policy_id', '=', id).execute()
      return true
    })
  }
}
