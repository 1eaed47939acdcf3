import { type Kysely, sql } from 'kysely'
import { bytea } from '../storage/bytea.ts'
import { ensureNetworkId, networkIdOf } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'
import { type StoredTransfer, saveTransfers } from './store.ts'

/** From which block a network's index is complete (migration 0150). */
export interface IndexerHistoryTable {
  network: string
  complete_from: string
  recorded_at: Date
}

/** A targeted scan of one address's history below the index (migration 0150). */
export interface HistoryScansTable {
  network: string
  address: Address
  end_block: string
  next_block: string
  done: boolean
  requested_by: string
  created_at: Date
  updated_at: Date
  /** The instance running the scan (migration 0230), while claimed_until lies ahead. */
  claimed_by: string | null
  claimed_until: Date | null
}

declare module '../storage/schema.ts' {
  interface Database {
    indexer_history: IndexerHistoryTable
    history_scans: HistoryScansTable
  }
}

type Db = Kysely<Database>

export async function readCompleteFrom(db: Db, network: string): Promise<bigint | null> {
  const row = await db
    .selectFrom('indexer_history')
    .select('complete_from')
    .where('network', '=', network)
    .executeTakeFirst()
  return row ? BigInt(row.complete_from) : null
}

/** Records `block` unless a value is recorded already; returns the recorded value (the first wins). */
export async function recordCompleteFrom(db: Db, network: string, block: bigint): Promise<bigint> {
  await db
    .insertInto('indexer_history')
    .values({ network, complete_from: block.toString(), recorded_at: new Date() })
    .onConflict((oc) => oc.column('network').doNothing())
    .execute()
  return (await readCompleteFrom(db, network)) ?? block
}

/**
 * An index that predates the history record: the lowest block it holds a transfer of (every
 * transaction is a native transfer row) is a block it is surely complete from; null when it
 * holds none.
 */
export async function lowestIndexedBlock(db: Db, network: string): Promise<bigint | null> {
  const [native, tokens] = await Promise.all([
    db
      .selectFrom('native_transfers')
      .select((eb) => eb.fn.min('block_number').as('b'))
      .where('network_id', '=', networkIdOf(network))
      .executeTakeFirst(),
    db
      .selectFrom('token_transfers')
      .select((eb) => eb.fn.min('block_number').as('b'))
      .where('network_id', '=', networkIdOf(network))
      .executeTakeFirst(),
  ])
  const found = [native?.b, tokens?.b].filter((b) => b !== null && b !== undefined).map((b) => BigInt(b))
  if (found.length === 0) return null
  // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
  return found.reduce((a, b) => (a < b ? a : b))
}

export interface ScanRow {
  address: Address
  endBlock: bigint
  nextBlock: bigint
  done: boolean
  /** The instance whose claim on the scan has not lapsed, if any. */
  claimedBy: string | null
}

type ScanColumns = Pick<HistoryScansTable, 'address' | 'end_block' | 'next_block' | 'done'> & {
  live_claim: string | null
}

const toScan = (r: ScanColumns): ScanRow => ({
  address: r.address,
  endBlock: BigInt(r.end_block),
  nextBlock: BigInt(r.next_block),
  done: r.done,
  claimedBy: r.live_claim,
})

/** The claim's holder while it lasts (the database's clock decides, not the instances'). */
const liveClaim = sql<string | null>`case when claimed_until > now() then claimed_by end`.as('live_claim')

export async function readScan(db: Db, network: string, address: Address): Promise<ScanRow | null> {
  const row = await db
    .selectFrom('history_scans')
    .select(['address', 'end_block', 'next_block', 'done', liveClaim])
    .where('network', '=', network)
    .where('address', '=', address)
    .executeTakeFirst()
  return row ? toScan(row) : null
}

/** Who claims a scan and for how long past its last window. */
export interface ScanClaim {
  by: string
  seconds: number
}

const claimedUntil = (seconds: number) => sql<Date>`now() + make_interval(secs => ${seconds})`

/**
 * Claims an unfinished scan for `claim.by`: true when it had no live claim (or was this
 * instance's already). Another instance then answers the address as running and leaves it.
 */
export async function claimScan(
  db: Db,
  network: string,
  address: Address,
  claim: ScanClaim,
): Promise<boolean> {
  const r = await db
    .updateTable('history_scans')
    .set({ claimed_by: claim.by, claimed_until: claimedUntil(claim.seconds) })
    .where('network', '=', network)
    .where('address', '=', address)
    .where('done', '=', false)
    .where((eb) =>
      eb.or([
        eb('claimed_until', 'is', null),
        eb('claimed_until', '<=', sql<Date>`now()`),
        eb('claimed_by', '=', claim.by),
      ]),
    )
    .executeTakeFirst()
  return r.numUpdatedRows > 0n
}

/** Lets go of a scan this instance stopped running (stopped, failed): another may take it at once. */
export async function releaseScan(db: Db, network: string, address: Address, by: string): Promise<void> {
  await db
    .updateTable('history_scans')
    .set({ claimed_until: null })
    .where('network', '=', network)
    .where('address', '=', address)
    .where('claimed_by', '=', by)
    .execute()
}

/** Creates the scan row (blocks [0, endBlock)) unless one exists; returns the stored row. */
export async function openScan(
  db: Db,
  network: string,
  address: Address,
  endBlock: bigint,
  requestedBy: string,
): Promise<ScanRow> {
  await db
    .insertInto('history_scans')
    .values({
      network,
      address,
      end_block: endBlock.toString(),
      next_block: '0',
      done: endBlock <= 0n,
      requested_by: requestedBy,
      created_at: new Date(),
      updated_at: new Date(),
    })
    .onConflict((oc) => oc.columns(['network', 'address']).doNothing())
    .execute()
  const row = await readScan(db, network, address)
  if (!row) throw new Error(`history scan row of ${address} on ${network} vanished`)
  return row
}

/** Unfinished scans no instance holds a live claim on, oldest first (resumed at start, then swept). */
export async function pendingScans(db: Db, network: string, limit: number): Promise<ScanRow[]> {
  const rows = await db
    .selectFrom('history_scans')
    .select(['address', 'end_block', 'next_block', 'done', liveClaim])
    .where('network', '=', network)
    .where('done', '=', false)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', sql<Date>`now()`)]))
    .orderBy('created_at')
    .limit(limit)
    .execute()
  return rows.map(toScan)
}

/** Scans by state for `/ready` and the dashboard. */
export async function scanCounts(db: Db, network: string): Promise<{ done: number; pending: number }> {
  const rows = await db
    .selectFrom('history_scans')
    .select(['done', (eb) => eb.fn.countAll<string>().as('n')])
    .where('network', '=', network)
    .groupBy('done')
    .execute()
  const of = (d: boolean) => Number(rows.find((r) => r.done === d)?.n ?? 0)
  return { done: of(true), pending: of(false) }
}

/**
 * Commits one scanned window [from, to]: the transfers found (holdings change for `address`
 * only, see saveTransfers) and the scan's next block, in one transaction, extending the claim.
 * The row moves only from `from` (compare and set), so two instances scanning the same address
 * (one took over a lapsed claim) never apply a window twice: false when another got there first
 * (nothing written).
 */
export async function commitWindow(
  db: Db,
  network: string,
  address: Address,
  from: bigint,
  to: bigint,
  transfers: StoredTransfer[],
  claim: ScanClaim,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const moved = await trx
      .updateTable('history_scans')
      .set((eb) => ({
        next_block: (to + 1n).toString(),
        done: sql<boolean>`${(to + 1n).toString()}::bigint >= ${eb.ref('end_block')}`,
        updated_at: new Date(),
        claimed_by: claim.by,
        claimed_until: claimedUntil(claim.seconds),
      }))
      .where('network', '=', network)
      .where('address', '=', address)
      .where('next_block', '=', from.toString())
      .where('done', '=', false)
      .executeTakeFirst()
    if (moved.numUpdatedRows === 0n) return false
    await saveTransfers(trx, network, transfers, { holder: address })
    // A pair the index saw first at the head was held earlier: its first block is the older one
    // (a reorg near the head must not drop a pair the scan found deep below it).
    const firsts = new Map<Address, bigint>()
    for (const t of transfers) {
      if (t.standard !== 'ERC20' || (t.from !== address && t.to !== address)) continue
      const cur = firsts.get(t.contract)
      if (cur === undefined || t.blockNumber < cur) firsts.set(t.contract, t.blockNumber)
    }
    const net = firsts.size > 0 ? await ensureNetworkId(trx, network) : 0
    for (const [contract, block] of firsts)
      await trx
        .updateTable('token_holders')
        .set({ first_block: block.toString() })
        .where('network_id', '=', net)
        .where('holder', '=', bytea(address))
        .where('contract', '=', bytea(contract))
        .where('first_block', '>', block.toString())
        .execute()
    return true
  })
}
