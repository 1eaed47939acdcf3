import { type Generated, type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'

/** SQL of ERC-7562 entity reputation (migration 0051_bundler_reputation). */

export interface BundlerReputationTable {
  network: string
  address: Address
  ops_seen: Generated<string>
  ops_included: Generated<string>
  decayed_at: Generated<Date>
}

type Db = Kysely<Database>

export interface ReputationCounters {
  address: Address
  opsSeen: number
  opsIncluded: number
}

const toCounters = (r: { address: Address; ops_seen: string; ops_included: string }): ReputationCounters => ({
  address: r.address,
  opsSeen: Number(r.ops_seen),
  opsIncluded: Number(r.ops_included),
})

export async function readReputation(
  db: Db,
  network: string,
  addresses?: readonly Address[],
): Promise<ReputationCounters[]> {
  if (addresses && addresses.length === 0) return []
  let q = db
    .selectFrom('bundler_reputation')
    .select(['address', 'ops_seen', 'ops_included'])
    .where('network', '=', network)
  if (addresses) q = q.where('address', 'in', [...addresses])
  return (await q.orderBy('address').execute()).map(toCounters)
}

/** Adds to the counters (one row per address, created at zero). */
export async function addReputation(
  db: Db,
  network: string,
  address: Address,
  add: { seen?: number; included?: number },
): Promise<void> {
  const seen = add.seen ?? 0
  const included = add.included ?? 0
  await db
    .insertInto('bundler_reputation')
    .values({ network, address, ops_seen: String(seen), ops_included: String(included) })
    .onConflict((c) =>
      c.columns(['network', 'address']).doUpdateSet({
        ops_seen: sql`bundler_reputation.ops_seen + ${seen}`,
        ops_included: sql`bundler_reputation.ops_included + ${included}`,
      }),
    )
    .execute()
}

/** Sets the counters outright (debug_bundler_setReputation, the GREP-040 penalty). */
export async function setReputation(
  db: Db,
  network: string,
  rows: readonly ReputationCounters[],
): Promise<void> {
  for (const r of rows)
    await db
      .insertInto('bundler_reputation')
      .values({
        network,
        address: r.address,
        ops_seen: String(r.opsSeen),
        ops_included: String(r.opsIncluded),
      })
      .onConflict((c) =>
        c.columns(['network', 'address']).doUpdateSet({
          ops_seen: String(r.opsSeen),
          ops_included: String(r.opsIncluded),
          decayed_at: sql`now()`,
        }),
      )
      .execute()
}

export async function clearReputation(db: Db, network: string): Promise<void> {
  await db.deleteFrom('bundler_reputation').where('network', '=', network).execute()
}

/**
 * The hourly decay (ERC-7562: counters × 23/24 every hour), applied for every whole hour since a
 * row's last step; a bundler that was down for hours catches up at once. Returns rows touched.
 */
export async function decayReputation(db: Db, network: string, maxHours = 200): Promise<number> {
  let touched = 0
  for (let i = 0; i < maxHours; i++) {
    const r = await db
      .updateTable('bundler_reputation')
      .set({
        ops_seen: sql`ops_seen * 23 / 24`,
        ops_included: sql`ops_included * 23 / 24`,
        decayed_at: sql`decayed_at + interval '1 hour'`,
      })
      .where('network', '=', network)
      .where('decayed_at', '<=', sql<Date>`now() - interval '1 hour'`)
      .executeTakeFirst()
    const n = Number(r.numUpdatedRows)
    if (n === 0) break
    touched += n
  }
  return touched
}
