import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { NewOp } from './mempool-store.ts'
import { toRpcUserOperation } from './schema.ts'

/** PGlite's one-statement accept (mempool.ts); the rest of the mempool's SQL is mempool-store.ts. */

type Db = Kysely<Database>

/**
 * The accept as a prepared statement: PGlite plans every statement it is sent, and planning this
 * one cost three times its execution (~1.5 ms of CPU per accepted op, the largest single cost of
 * an accept in bench:bundler). PREPARE keeps the plan for the session (PGlite has one).
 * `on conflict do nothing` covers both unique indexes: the hash (primary key) and the live op at
 * a sender + entry point + nonce (bundler_user_ops_live). $15: the sender's live-op limit, null
 * for none.
 */
const STATEMENT = 'halyard_bundler_accept'
const PREPARE = sql`prepare ${sql.raw(STATEMENT)} (text, text, text, text, text, numeric, jsonb, numeric,
    numeric, text, text, numeric, bigint, boolean, bigint) as
  insert into bundler_user_ops (network, hash, entry_point, version, sender, nonce, user_op,
    max_fee_per_gas, max_priority_fee_per_gas, paymaster, factory, prefund, valid_until,
    sender_staked, state)
  select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 'pending'
  where $15 is null
    or (select count(*) from bundler_user_ops
        where network = $1 and sender = $5 and state in ('pending', 'submitted')) < $15
  on conflict do nothing
  returning hash`

/** Databases whose session holds the prepared statement. */
const prepared = new WeakMap<Db, Promise<void>>()

const code = (err: unknown) => (err as { code?: string } | null)?.code
/** PostgreSQL's "prepared statement does not exist". */
const isMissing = (err: unknown) => code(err) === '26000'

/** Prepares the statement in the session; one already there (42P05) is the same statement. */
async function prepare(db: Db): Promise<void> {
  try {
    await PREPARE.execute(db)
  } catch (err) {
    if (code(err) !== '42P05') throw err
  }
}

/**
 * EXECUTE takes no bind parameters, so the values go in as literals (quotes doubled, as Kysely
 * writes them). Every value here is a checked hex string, address, decimal or slug.
 */
const lit = (v: string | null) => (v === null ? sql.raw('null') : sql.lit(v))

/**
 * The common accept as one statement, for a database only this process writes (PGlite): the op
 * goes in as pending only if its sender has no live op at this EntryPoint and nonce, fewer than
 * `maxLive` live ops (null: no limit), and its hash is new. False: nothing written; the caller
 * takes the full path, which replaces, refuses with the reason, or finds the same op again.
 */
export async function insertOpIfFree(db: Db, o: NewOp, maxLive: number | null): Promise<boolean> {
  const run = () =>
    sql<{ hash: string }>`execute ${sql.raw(STATEMENT)} (${lit(o.network)}, ${lit(o.hash)},
      ${lit(o.entryPoint)}, ${lit(o.op.version)}, ${lit(o.op.sender)}, ${lit(o.op.nonce.toString())},
      ${lit(JSON.stringify(toRpcUserOperation(o.op)))}, ${lit(o.op.maxFeePerGas.toString())},
      ${lit(o.op.maxPriorityFeePerGas.toString())}, ${lit(o.paymaster)}, ${lit(o.factory)},
      ${lit(o.prefund.toString())}, ${lit(o.validUntil === null ? null : String(o.validUntil))},
      ${sql.raw(o.senderStaked ? 'true' : 'false')}, ${sql.raw(maxLive === null ? 'null' : String(Math.trunc(maxLive)))})`.execute(
      db,
    )
  let ready = prepared.get(db)
  if (!ready) {
    ready = prepare(db)
    prepared.set(db, ready)
  }
  try {
    await ready
    return (await run()).rows.length > 0
  } catch (err) {
    if (prepared.get(db) === ready) prepared.delete(db)
    if (!isMissing(err)) throw err
    // The session lost it (a new one behind the same handle): prepare again, once.
    await prepare(db)
    return (await run()).rows.length > 0
  }
}
