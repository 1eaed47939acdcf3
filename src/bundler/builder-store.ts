import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { NONCE_KEY_DIVISOR, OP_COLUMNS, type StoredOp, toStored } from './mempool-store.ts'
import type { UserOpState } from './types.ts'

/**
 * SQL of the ops as the builder and the bundles in flight move them: the next pending ops, their
 * state changes, the ops a bundle transaction carries. The accept side is mempool-store.ts.
 */

type Db = Kysely<Database>

/** A nonce's key: its upper 192 bits. */
const keyOf = (nonce: bigint) => nonce >> 64n

/**
 * Pending ops of one EntryPoint that can run next, best-paying first (then oldest): an op whose
 * sender has a live op at a lower sequence of the same nonce key waits for that one.
 *
 * Two index reads instead of one anti-join: the best `limit` pending ops, then the live nonces
 * of just their senders, compared here. (PGlite keeps no table statistics — it runs no
 * autovacuum — and planned the anti-join as a scan of every live op per candidate.) When a
 * full page held a waiting op, an op past the page may be next in line: the exact query answers.
 */
export async function pendingOps(
  db: Db,
  network: string,
  entryPoint: Address,
  limit: number,
): Promise<StoredOp[]> {
  const page = await db
    .selectFrom('bundler_user_ops')
    .select(OP_COLUMNS)
    .where('network', '=', network)
    .where('entry_point', '=', entryPoint)
    .where('state', '=', 'pending')
    .orderBy(sql`max_priority_fee_per_gas`, 'desc')
    .orderBy('created_at')
    .limit(limit)
    .execute()
  if (page.length === 0) return []
  const ops = page.map(toStored)
  const senders = [...new Set(ops.map((o) => o.op.sender))]
  const live = await db
    .selectFrom('bundler_user_ops')
    .select(['sender', 'nonce'])
    .where('network', '=', network)
    .where('entry_point', '=', entryPoint)
    .where('sender', 'in', senders)
    .where('state', 'in', ['pending', 'submitted'])
    .execute()
  const lowest = new Map<string, bigint>()
  for (const r of live) {
    const nonce = BigInt(r.nonce)
    const at = `${r.sender}:${keyOf(nonce)}`
    const seen = lowest.get(at)
    if (seen === undefined || nonce < seen) lowest.set(at, nonce)
  }
  const next = ops.filter((o) => lowest.get(`${o.op.sender}:${keyOf(o.op.nonce)}`) === o.op.nonce)
  if (next.length === ops.length || page.length < limit) return next
  return waitingAware(db, network, entryPoint, limit)
}

/** pendingOps as one query: the waiting ops left out before the limit applies. */
async function waitingAware(
  db: Db,
  network: string,
  entryPoint: Address,
  limit: number,
): Promise<StoredOp[]> {
  const rows = await db
    .selectFrom('bundler_user_ops as o')
    .select(OP_COLUMNS.map((c) => `o.${c}` as const))
    .where('o.network', '=', network)
    .where('o.entry_point', '=', entryPoint)
    .where('o.state', '=', 'pending')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('bundler_user_ops as e')
            .select(sql.lit(1).as('one'))
            .whereRef('e.network', '=', 'o.network')
            .whereRef('e.entry_point', '=', 'o.entry_point')
            .whereRef('e.sender', '=', 'o.sender')
            .where('e.state', 'in', ['pending', 'submitted'])
            .whereRef('e.nonce', '<', 'o.nonce')
            .where(sql<boolean>`div(e.nonce, ${NONCE_KEY_DIVISOR}) = div(o.nonce, ${NONCE_KEY_DIVISOR})`),
        ),
      ),
    )
    .orderBy(sql`o.max_priority_fee_per_gas`, 'desc')
    .orderBy('o.created_at')
    .limit(limit)
    .execute()
  return rows.map(toStored)
}

export async function setOpState(
  db: Db,
  network: string,
  hashes: readonly Hash[],
  state: UserOpState,
  extra: {
    reason?: string | null
    bundleTx?: Hash | null
    blockNumber?: bigint | null
    blockHash?: Hash | null
  } = {},
): Promise<void> {
  if (hashes.length === 0) return
  await db
    .updateTable('bundler_user_ops')
    .set({
      state,
      updated_at: sql`now()`,
      ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
      ...(extra.bundleTx !== undefined ? { bundle_tx: extra.bundleTx } : {}),
      ...(extra.blockNumber !== undefined
        ? { block_number: extra.blockNumber === null ? null : extra.blockNumber.toString() }
        : {}),
      ...(extra.blockHash !== undefined ? { block_hash: extra.blockHash } : {}),
      ...(state === 'pending' ? { attempts: sql`attempts + 1` } : {}),
    })
    .where('network', '=', network)
    .where('hash', 'in', [...hashes])
    .execute()
}

/** Ops a bundle transaction carries, in the given states (in flight: 'submitted'). */
export async function opsOfBundle(
  db: Db,
  network: string,
  txHash: Hash,
  states: readonly UserOpState[] = ['submitted'],
): Promise<StoredOp[]> {
  const rows = await db
    .selectFrom('bundler_user_ops')
    .select(OP_COLUMNS)
    .where('network', '=', network)
    .where('bundle_tx', '=', txHash)
    .where('state', 'in', [...states])
    .execute()
  return rows.map(toStored)
}

/** A fee-bumped replacement now carries the ops of `from`. */
export async function moveOpsToBundle(db: Db, network: string, from: Hash, to: Hash): Promise<void> {
  await db
    .updateTable('bundler_user_ops')
    .set({ bundle_tx: to, updated_at: sql`now()` })
    .where('network', '=', network)
    .where('bundle_tx', '=', from)
    .where('state', '=', 'submitted')
    .execute()
}
