import { type Kysely, sql } from 'kysely'
import { intArray } from '../storage/array-literal.ts'
import { bytesToHex, hexTexts, packed, unpack } from '../storage/bytea.ts'
import { ensureNetworkId } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { ZERO_ADDRESS } from './decode.ts'
import { CATEGORY_CODE, STANDARD_CODE } from './tables.ts'
import type { TokenTransfer } from './types.ts'

export * from './tables.ts'

type Db = Kysely<Database>

export interface Cursor {
  number: bigint
  hash: Hash
}

/** A native transfer as the indexer writes it (native.ts builds them). */
export interface StoredNativeTransfer {
  blockNumber: bigint
  blockHash: Hash
  timestamp: number
  txIndex: number
  traceIndex: number
  txHash: Hash
  category: 'external' | 'internal'
  tracePath: string | null
  from: Address
  to: Address | null
  value: bigint
}

/** A transfer with the block it was in, as the indexer writes it. */
export interface StoredTransfer extends TokenTransfer {
  blockNumber: bigint
  blockHash: Hash
  timestamp: number
}

export async function readCursor(db: Db, network: string): Promise<Cursor | null> {
  const row = await db
    .selectFrom('indexer_cursors')
    .select(['block_number', 'block_hash'])
    .where('network', '=', network)
    .executeTakeFirst()
  return row ? { number: BigInt(row.block_number), hash: row.block_hash } : null
}

export async function writeCursor(db: Db, network: string, c: Cursor): Promise<void> {
  await db
    .insertInto('indexer_cursors')
    .values({ network, block_number: c.number.toString(), block_hash: c.hash, updated_at: new Date() })
    .onConflict((oc) =>
      oc.column('network').doUpdateSet({
        block_number: c.number.toString(),
        block_hash: c.hash,
        updated_at: new Date(),
      }),
    )
    .execute()
}

export async function saveBlocks(
  db: Db,
  network: string,
  blocks: { number: bigint; hash: Hash; parentHash: Hash | null }[],
): Promise<void> {
  if (blocks.length === 0) return
  await db
    .insertInto('indexer_blocks')
    .values(
      blocks.map((b) => ({
        network,
        number: b.number.toString(),
        hash: b.hash,
        parent_hash: b.parentHash,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['network', 'number']).doUpdateSet((eb) => ({
        hash: eb.ref('excluded.hash'),
        parent_hash: sql<Hash | null>`coalesce(excluded.parent_hash, indexer_blocks.parent_hash)`,
      })),
    )
    .execute()
}

/** Stored block hashes at or below `atOrBelow`, newest first (for finding a common ancestor). */
export async function recentBlocks(db: Db, network: string, atOrBelow: bigint, limit: number) {
  const rows = await db
    .selectFrom('indexer_blocks')
    .select(['number', 'hash'])
    .where('network', '=', network)
    .where('number', '<=', atOrBelow.toString())
    .orderBy('number', 'desc')
    .limit(limit)
    .execute()
  return rows.map((r) => ({ number: BigInt(r.number), hash: r.hash }))
}

export async function pruneBlocks(db: Db, network: string, below: bigint): Promise<void> {
  await db
    .deleteFrom('indexer_blocks')
    .where('network', '=', network)
    .where('number', '<', below.toString())
    .execute()
}

/**
 * The row number of the `unnest(…) with ordinality as u(…, i)` that cuts packed columns.
 * Integer columns go as array literals (src/storage/array-literal.ts).
 */
const ROW = sql.ref('u.i')

/**
 * Writes transfers and the holdings derived from them. Rows go in as parallel arrays through
 * `unnest`, so a statement carries a fixed number of parameters however many rows it holds;
 * addresses and hashes as one packed bytea per column, cut by row number (src/storage/bytea.ts).
 */
export async function saveTransfers(
  db: Db,
  network: string,
  transfers: StoredTransfer[],
  /**
   * A history scan of one address (history-scan.ts): holdings change for that address only —
   * the other side's own history is not known until its scan, which applies that side.
   */
  only?: { holder: Address },
): Promise<void> {
  if (transfers.length === 0) return
  const net = await ensureNetworkId(db, network)
  const CHUNK = 5000
  for (let i = 0; i < transfers.length; i += CHUNK) {
    const part = transfers.slice(i, i + CHUNK)
    const tx = packed(
      part.map((t) => t.txHash),
      32,
    )
    const contract = packed(
      part.map((t) => t.contract),
      20,
    )
    const from = packed(
      part.map((t) => t.from),
      20,
    )
    const to = packed(
      part.map((t) => t.to),
      20,
    )
    await sql`
      insert into token_transfers (network_id, block_number, log_index, batch_index,
        block_timestamp, tx_hash, standard, contract, from_address, to_address, token_id, value)
      select ${net}::smallint, b, l, bi, ts, ${unpack(tx, 32, ROW)}, st, ${unpack(contract, 20, ROW)},
        ${unpack(from, 20, ROW)}, ${unpack(to, 20, ROW)}, id, v
      from unnest(
        ${intArray(part.map((t) => t.blockNumber))}::bigint[],
        ${intArray(part.map((t) => t.logIndex))}::integer[],
        ${intArray(part.map((t) => t.batchIndex))}::integer[],
        ${intArray(part.map((t) => t.timestamp))}::bigint[],
        ${intArray(part.map((t) => STANDARD_CODE[t.standard]))}::smallint[],
        ${intArray(part.map((t) => t.tokenId ?? 0n))}::numeric[],
        ${intArray(part.map((t) => t.value))}::numeric[]) with ordinality as u(b, l, bi, ts, st, id, v, i)
      on conflict do nothing`.execute(db)
  }
  await saveHolders(db, net, transfers, only?.holder)
  const deltas = nftDeltas(transfers, 1n)
  await applyNftDeltas(db, net, only ? deltas.filter((d) => d.holder === only.holder) : deltas)
}

/** Writes native transfers, as parallel arrays through `unnest` like saveTransfers. */
export async function saveNativeTransfers(
  db: Db,
  network: string,
  rows: StoredNativeTransfer[],
): Promise<void> {
  if (rows.length === 0) return
  const net = await ensureNetworkId(db, network)
  const CHUNK = 5000
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK)
    const tx = packed(
      part.map((t) => t.txHash),
      32,
    )
    const from = packed(
      part.map((t) => t.from),
      20,
    )
    const to = packed(
      part.map((t) => t.to),
      20,
    )
    await sql`
      insert into native_transfers (network_id, block_number, tx_index, trace_index,
        block_timestamp, tx_hash, category, trace_path, from_address, to_address, value)
      select ${net}::smallint, b, ti, tr, ts, ${unpack(tx, 32, ROW)}, cat, path, ${unpack(from, 20, ROW)},
        ${unpack(to, 20, ROW)}, v
      from unnest(
        ${intArray(part.map((t) => t.blockNumber))}::bigint[],
        ${intArray(part.map((t) => t.txIndex))}::integer[],
        ${intArray(part.map((t) => t.traceIndex))}::integer[],
        ${intArray(part.map((t) => t.timestamp))}::bigint[],
        ${intArray(part.map((t) => CATEGORY_CODE[t.category]))}::smallint[],
        ${part.map((t) => t.tracePath)}::text[],
        ${intArray(part.map((t) => t.value))}::numeric[]) with ordinality as u(b, ti, tr, ts, cat, path, v, i)
      on conflict do nothing`.execute(db)
  }
}

async function saveHolders(
  db: Db,
  net: number,
  transfers: StoredTransfer[],
  onlyHolder?: Address,
): Promise<void> {
  // Blocks arrive in ascending order, so the first sighting kept here is the earliest one.
  const first = new Map<string, { holder: Address; contract: Address; block: bigint }>()
  for (const t of transfers) {
    if (t.standard !== 'ERC20') continue
    for (const holder of [t.from, t.to]) {
      if (holder === ZERO_ADDRESS || (onlyHolder !== undefined && holder !== onlyHolder)) continue
      const key = `${holder}${t.contract}`
      if (!first.has(key)) first.set(key, { holder, contract: t.contract, block: t.blockNumber })
    }
  }
  if (first.size === 0) return
  const rows = [...first.values()]
  const holder = packed(
    rows.map((r) => r.holder),
    20,
  )
  const contract = packed(
    rows.map((r) => r.contract),
    20,
  )
  await sql`
    insert into token_holders (network_id, holder, contract, first_block)
    select ${net}::smallint, ${unpack(holder, 20, ROW)}, ${unpack(contract, 20, ROW)}, b
    from unnest(${intArray(rows.map((r) => r.block))}::bigint[]) with ordinality as u(b, i)
    on conflict do nothing`.execute(db)
}

interface NftDelta {
  contract: string
  tokenId: string
  holder: string
  standard: string
  delta: bigint
}

/** Per-(contract, id, holder) balance changes; `sign` -1 undoes them. Mint/burn sides skipped. */
function nftDeltas(
  transfers: Pick<StoredTransfer, 'standard' | 'contract' | 'tokenId' | 'from' | 'to' | 'value'>[],
  sign: bigint,
): NftDelta[] {
  const acc = new Map<string, NftDelta>()
  const add = (t: (typeof transfers)[number], holder: string, d: bigint) => {
    if (holder === ZERO_ADDRESS || t.tokenId === null) return
    const key = `${t.contract}:${t.tokenId}:${holder}`
    const cur = acc.get(key)
    if (cur) cur.delta += d
    else
      acc.set(key, {
        contract: t.contract,
        tokenId: t.tokenId.toString(),
        holder,
        standard: t.standard,
        delta: d,
      })
  }
  for (const t of transfers) {
    if (t.standard === 'ERC20') continue
    add(t, t.from, -t.value * sign)
    add(t, t.to, t.value * sign)
  }
  return [...acc.values()].filter((d) => d.delta !== 0n)
}

async function applyNftDeltas(db: Db, net: number, deltas: NftDelta[]): Promise<void> {
  if (deltas.length === 0) return
  const { rows } = await sql<{ contract: string; token_id: string; holder: string; balance: string }>`
    insert into nft_balances (network_id, contract, token_id, holder, standard, balance)
    select ${net}::smallint, decode(c, 'hex'), id, decode(h, 'hex'), st, d from unnest(
      ${hexTexts(deltas.map((d) => d.contract as Address))}::text[],
      ${deltas.map((d) => d.tokenId)}::numeric[],
      ${hexTexts(deltas.map((d) => d.holder as Address))}::text[],
      ${deltas.map((d) => d.standard)}::text[],
      ${deltas.map((d) => d.delta.toString())}::numeric[]) as u(c, id, h, st, d)
    on conflict (network_id, contract, token_id, holder)
      do update set balance = nft_balances.balance + excluded.balance
    returning encode(contract, 'hex') as contract, token_id::text as token_id,
      encode(holder, 'hex') as holder, balance::text as balance`.execute(db)
  // Only the rows this step touched can have reached zero: delete those by key, never scan the
  // network's whole holdings table.
  const emptied = rows.filter((r) => BigInt(r.balance) === 0n)
  if (emptied.length === 0) return
  await sql`
    delete from nft_balances
    where network_id = ${net}::smallint and balance = 0
      and (contract, token_id, holder) in (
        select decode(c, 'hex'), id, decode(h, 'hex') from unnest(
          ${emptied.map((r) => r.contract)}::text[],
          ${emptied.map((r) => r.token_id)}::numeric[],
          ${emptied.map((r) => r.holder)}::text[]) as u(c, id, h))`.execute(db)
}

/**
 * Undoes everything above `ancestor`: NFT holdings by negated deltas of the removed transfers,
 * holder pairs first seen above it (a pair first seen at or below it stays, correctly), the
 * token and native transfers and the block hashes. Transfer rows carry no block hash: what is
 * above the ancestor's number is what the reorg replaced. The caller moves the cursor in the
 * same transaction.
 */
export async function rollbackAbove(db: Db, network: string, ancestor: bigint): Promise<number> {
  const above = ancestor.toString()
  const net = await ensureNetworkId(db, network)
  const removed = await db
    .selectFrom('token_transfers')
    .select(['standard', 'contract', 'token_id', 'from_address', 'to_address', 'value'])
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .where('standard', '!=', STANDARD_CODE.ERC20)
    .execute()
  await applyNftDeltas(
    db,
    net,
    nftDeltas(
      removed.map((r) => ({
        standard: r.standard === STANDARD_CODE.ERC721 ? 'ERC721' : 'ERC1155',
        contract: bytesToHex<Address>(r.contract),
        tokenId: BigInt(r.token_id),
        from: bytesToHex<Address>(r.from_address),
        to: bytesToHex<Address>(r.to_address),
        value: BigInt(r.value),
      })),
      -1n,
    ),
  )
  await db
    .deleteFrom('token_holders')
    .where('network_id', '=', net)
    .where('first_block', '>', above)
    .execute()
  const del = await db
    .deleteFrom('token_transfers')
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .executeTakeFirst()
  await db
    .deleteFrom('native_transfers')
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .execute()
  await db.deleteFrom('indexer_blocks').where('network', '=', network).where('number', '>', above).execute()
  return Number(del.numDeletedRows)
}
