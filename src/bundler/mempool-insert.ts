import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { NewOp } from './mempool-store.ts'
import { toRpcUserOperation } from './schema.ts'

/** PGlite's one-statement accept (mempool.ts); the rest of the mempool's SQL is mempool-store.ts. */

type Db = Kysely<Database>

/**
 * The common accept as one statement, for a database only this process writes (PGlite): the op
 * goes in as pending only if its sender has no live op at this EntryPoint and nonce, fewer than
 * `maxLive` live ops (null: no limit), and its hash is new. False: nothing written; the caller
 * takes the full path, which replaces, refuses with the reason, or finds the same op again.
 */
export async function insertOpIfFree(db: Db, o: NewOp, maxLive: number | null): Promise<boolean> {
  const userOp = JSON.stringify(toRpcUserOperation(o.op))
  const nonce = o.op.nonce.toString()
  const live = sql`network = ${o.network} and sender = ${o.op.sender} and state in ('pending', 'submitted')`
  const room =
    maxLive === null ? sql`` : sql`and (select count(*) from bundler_user_ops where ${live}) < ${maxLive}`
  const r = await sql<{ hash: string }>`
    insert into bundler_user_ops (network, hash, entry_point, version, sender, nonce, user_op,
      max_fee_per_gas, max_priority_fee_per_gas, paymaster, factory, prefund, valid_until,
      sender_staked, state)
    select ${o.network}::text, ${o.hash}::text, ${o.entryPoint}::text, ${o.op.version}::text,
      ${o.op.sender}::text, ${nonce}::numeric, ${userOp}::jsonb,
      ${o.op.maxFeePerGas.toString()}::numeric, ${o.op.maxPriorityFeePerGas.toString()}::numeric,
      ${o.paymaster}::text, ${o.factory}::text, ${o.prefund.toString()}::numeric,
      ${o.validUntil === null ? null : String(o.validUntil)}::bigint, ${o.senderStaked}::boolean, 'pending'
    where not exists (
      select 1 from bundler_user_ops where ${live} and entry_point = ${o.entryPoint} and nonce = ${nonce}::numeric
    ) ${room}
    on conflict (network, hash) do nothing
    returning hash`.execute(db)
  return r.rows.length > 0
}
