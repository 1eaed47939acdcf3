import { type Generated, type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import type { BundlerBundlesTable } from './bundle-store.ts'
import type { BundlerReputationTable } from './reputation-store.ts'
import { parseUserOperation, toRpcUserOperation } from './schema.ts'
import type { EntryPointVersion, UserOperation, UserOpState } from './types.ts'

/** SQL of the durable mempool (migrations 0050_bundler, 0051_bundler_reputation). */

export interface BundlerUserOpsTable {
  network: string
  hash: Hash
  entry_point: Address
  version: string
  sender: Address
  nonce: string
  user_op: unknown
  max_fee_per_gas: string
  max_priority_fee_per_gas: string
  paymaster: Address | null
  factory: Address | null
  prefund: string
  valid_until: string | null
  sender_staked: Generated<boolean>
  state: string
  reason: string | null
  bundle_tx: Hash | null
  block_number: string | null
  block_hash: Hash | null
  attempts: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface BundlerTables {
  bundler_user_ops: BundlerUserOpsTable
  bundler_bundles: BundlerBundlesTable
  bundler_reputation: BundlerReputationTable
}

declare module '../storage/schema.ts' {
  interface Database extends BundlerTables {}
}

type Db = Kysely<Database>

export interface StoredOp {
  network: string
  hash: Hash
  entryPoint: Address
  op: UserOperation
  state: UserOpState
  reason: string | null
  prefund: bigint
  validUntil: number | null
  bundleTx: Hash | null
  blockNumber: bigint | null
  blockHash: Hash | null
  attempts: number
  createdAt: Date
}

export interface NewOp {
  network: string
  hash: Hash
  entryPoint: Address
  op: UserOperation
  paymaster: Address | null
  factory: Address | null
  prefund: bigint
  validUntil: number | null
  senderStaked: boolean
}

type OpRow = Pick<
  BundlerUserOpsTable,
  | 'network'
  | 'hash'
  | 'entry_point'
  | 'version'
  | 'user_op'
  | 'state'
  | 'reason'
  | 'prefund'
  | 'valid_until'
  | 'bundle_tx'
  | 'block_number'
  | 'block_hash'
> & { attempts: number; created_at: Date }

export const OP_COLUMNS = [
  'network',
  'hash',
  'entry_point',
  'version',
  'user_op',
  'state',
  'reason',
  'prefund',
  'valid_until',
  'bundle_tx',
  'block_number',
  'block_hash',
  'attempts',
  'created_at',
] as const

export function toStored(r: OpRow): StoredOp {
  const json = typeof r.user_op === 'string' ? JSON.parse(r.user_op) : r.user_op
  return {
    network: r.network,
    hash: r.hash,
    entryPoint: r.entry_point,
    op: parseUserOperation(json, r.version as EntryPointVersion),
    state: r.state as UserOpState,
    reason: r.reason,
    prefund: BigInt(r.prefund),
    validUntil: r.valid_until === null ? null : Number(r.valid_until),
    bundleTx: r.bundle_tx,
    blockNumber: r.block_number === null ? null : BigInt(r.block_number),
    blockHash: r.block_hash,
    attempts: r.attempts,
    createdAt: r.created_at,
  }
}

/** 2^64: a nonce is key (192 bits) ‖ sequence (64 bits). */
export const NONCE_KEY_DIVISOR = sql.lit('18446744073709551616')

/** Serialises accepts for one sender across instances, until the transaction ends. */
export async function lockSender(trx: Db, network: string, sender: Address): Promise<void> {
  const key = `halyard-bundler-sender:${network}:${sender}`
  await sql`select pg_advisory_xact_lock(hashtext(current_schema() || ':' || ${key}))`.execute(trx)
}

/** Writes the op as pending; false when its hash is already pending, submitted or included. */
export async function insertOp(trx: Db, o: NewOp): Promise<boolean> {
  const userOp = JSON.stringify(toRpcUserOperation(o.op))
  const row = await trx
    .insertInto('bundler_user_ops')
    .values({
      network: o.network,
      hash: o.hash,
      entry_point: o.entryPoint,
      version: o.op.version,
      sender: o.op.sender,
      nonce: o.op.nonce.toString(),
      user_op: userOp,
      max_fee_per_gas: o.op.maxFeePerGas.toString(),
      max_priority_fee_per_gas: o.op.maxPriorityFeePerGas.toString(),
      paymaster: o.paymaster,
      factory: o.factory,
      prefund: o.prefund.toString(),
      valid_until: o.validUntil === null ? null : String(o.validUntil),
      sender_staked: o.senderStaked,
      state: 'pending',
    })
    .onConflict((c) =>
      // A hash seen before but no longer live (dropped, failed) may come back as new.
      c
        .columns(['network', 'hash'])
        .doUpdateSet({
          state: 'pending',
          user_op: userOp,
          reason: null,
          bundle_tx: null,
          block_number: null,
          block_hash: null,
          attempts: 0,
          prefund: o.prefund.toString(),
          valid_until: o.validUntil === null ? null : String(o.validUntil),
          updated_at: sql`now()`,
        })
        .where('bundler_user_ops.state', 'in', ['dropped', 'failed']),
    )
    .returning('hash')
    .executeTakeFirst()
  return row !== undefined
}

export async function getOp(db: Db, network: string, hash: Hash): Promise<StoredOp | null> {
  const r = await db
    .selectFrom('bundler_user_ops')
    .select(OP_COLUMNS)
    .where('network', '=', network)
    .where('hash', '=', hash)
    .executeTakeFirst()
  return r ? toStored(r) : null
}

/**
 * Where an op stands, without its body (receipt lookups, polled by clients many times a
 * second): no user_op read or parse.
 */
export async function opStatus(
  db: Db,
  network: string,
  hash: Hash,
): Promise<{ state: UserOpState; entryPoint: Address; bundleTx: Hash | null } | null> {
  const r = await db
    .selectFrom('bundler_user_ops')
    .select(['state', 'entry_point', 'bundle_tx'])
    .where('network', '=', network)
    .where('hash', '=', hash)
    .executeTakeFirst()
  return r
    ? {
        state: r.state as UserOpState,
        entryPoint: r.entry_point,
        bundleTx: r.bundle_tx,
      }
    : null
}

/** The live op (pending or submitted) holding this sender + full nonce, if any. */
export async function liveOpAt(
  trx: Db,
  network: string,
  entryPoint: Address,
  sender: Address,
  nonce: bigint,
): Promise<StoredOp | null> {
  const r = await trx
    .selectFrom('bundler_user_ops')
    .select(OP_COLUMNS)
    .where('network', '=', network)
    .where('entry_point', '=', entryPoint)
    .where('sender', '=', sender)
    .where('nonce', '=', nonce.toString())
    .where('state', 'in', ['pending', 'submitted'])
    .executeTakeFirst()
  return r ? toStored(r) : null
}

/**
 * A sender's live ops (pending or submitted) on the network, any EntryPoint: one read gives the
 * mempool both the op at a nonce (a replacement) and the sender's count (its limit).
 */
export async function liveOfSender(
  trx: Db,
  network: string,
  sender: Address,
): Promise<{ count: number; at(entryPoint: Address, nonce: bigint): StoredOp | null }> {
  const rows = await trx
    .selectFrom('bundler_user_ops')
    .select([...OP_COLUMNS, 'nonce'])
    .where('network', '=', network)
    .where('sender', '=', sender)
    .where('state', 'in', ['pending', 'submitted'])
    .execute()
  return {
    count: rows.length,
    at(entryPoint, nonce) {
      const n = nonce.toString()
      const r = rows.find((x) => x.entry_point === entryPoint && x.nonce === n)
      return r ? toStored(r) : null
    },
  }
}

/** Live nonces of a sender under one nonce key, lowest first. */
export async function liveNonces(
  db: Db,
  network: string,
  entryPoint: Address,
  sender: Address,
  key: bigint,
): Promise<bigint[]> {
  const rows = await db
    .selectFrom('bundler_user_ops')
    .select('nonce')
    .where('network', '=', network)
    .where('entry_point', '=', entryPoint)
    .where('sender', '=', sender)
    .where('state', 'in', ['pending', 'submitted'])
    .where(sql<boolean>`div(nonce, ${NONCE_KEY_DIVISOR}) = ${key.toString()}::numeric`)
    .orderBy('nonce')
    .execute()
  return rows.map((r) => BigInt(r.nonce))
}

/** Live ops of `address` as sender, or naming it as their factory or paymaster (ERC-7562 limits). */
export async function countLiveOfEntity(
  trx: Db,
  network: string,
  role: 'sender' | 'factory' | 'paymaster',
  address: Address,
): Promise<number> {
  const r = await trx
    .selectFrom('bundler_user_ops')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('network', '=', network)
    .where(role, '=', address)
    .where('state', 'in', ['pending', 'submitted'])
    .executeTakeFirstOrThrow()
  return Number(r.n)
}

/**
 * ERC-7562 [STO-040] conflicts of an op with the live ops of other senders: 'sender' when one of
 * `entities` (its factory, paymaster) is another live op's sender (that address), 'entity' when
 * `sender` is another live op's factory or paymaster, else null.
 */
export async function entityConflict(
  trx: Db,
  network: string,
  sender: Address,
  entities: readonly Address[],
): Promise<{ kind: 'sender' | 'entity'; address: Address } | null> {
  const r = await trx
    .selectFrom('bundler_user_ops')
    .select('sender')
    .where('network', '=', network)
    .where('state', 'in', ['pending', 'submitted'])
    .where((eb) =>
      eb.or([
        ...(entities.length > 0 ? [eb('sender', 'in', [...entities])] : []),
        eb('factory', '=', sender),
        eb('paymaster', '=', sender),
      ]),
    )
    .where('sender', '<>', sender)
    .limit(1)
    .executeTakeFirst()
  if (!r) return null
  const other = r.sender as Address
  return entities.includes(other) ? { kind: 'sender', address: other } : { kind: 'entity', address: sender }
}

/** Sum of the most each live op of this paymaster can cost it. */
export async function paymasterCommitted(trx: Db, network: string, paymaster: Address): Promise<bigint> {
  const r = await trx
    .selectFrom('bundler_user_ops')
    .select(sql<string | null>`sum(prefund)`.as('total'))
    .where('network', '=', network)
    .where('paymaster', '=', paymaster)
    .where('state', 'in', ['pending', 'submitted'])
    .executeTakeFirstOrThrow()
  return BigInt(r.total ?? '0')
}

/** Live ops (pending or in flight) per network. */
export async function liveCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('bundler_user_ops')
    .select(['network', (eb) => eb.fn.countAll<string>().as('n')])
    .where('state', 'in', ['pending', 'submitted'])
    .groupBy('network')
    .execute()
  return new Map(rows.map((r) => [r.network, Number(r.n)]))
}

/** Live ops of one EntryPoint, oldest first (debug_bundler_dumpMempool). */
export async function liveOps(db: Db, network: string, entryPoint: Address): Promise<StoredOp[]> {
  const rows = await db
    .selectFrom('bundler_user_ops')
    .select(OP_COLUMNS)
    .where('network', '=', network)
    .where('entry_point', '=', entryPoint)
    .where('state', 'in', ['pending', 'submitted'])
    .orderBy('created_at')
    .execute()
  return rows.map(toStored)
}

/** Drops every pending op of the network (debug_bundler_clearMempool); returns how many. */
export async function dropPending(db: Db, network: string, reason: string): Promise<number> {
  const r = await db
    .updateTable('bundler_user_ops')
    .set({ state: 'dropped', reason, updated_at: sql`now()` })
    .where('network', '=', network)
    .where('state', '=', 'pending')
    .executeTakeFirst()
  return Number(r.numUpdatedRows)
}
