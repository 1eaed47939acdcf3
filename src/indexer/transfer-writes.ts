import { type Kysely, sql } from 'kysely'
import { intArray } from '../storage/array-literal.ts'
import { hexTexts, type Packed, packed, unpack } from '../storage/bytea.ts'
import { ensureNetworkId } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { ZERO_ADDRESS } from './decode.ts'
import { CATEGORY_CODE, STANDARD_CODE } from './tables.ts'
import type { TokenTransfer } from './types.ts'

/**
 * The transfer writes of the index (re-exported by store.ts), in two steps: the rows made ready
 * for the database (columns packed, integer literals, holder pairs, NFT deltas), then the
 * statements. A writer that prepares its next batch while the database writes the previous one
 * (the bulk import) takes the first step ahead, so the database does not wait between one
 * statement and the next for Node to pack the next one's columns (docs/benchmarks.md).
 */

type Db = Kysely<Database>

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

/**
 * The row number of the `unnest(…) with ordinality as u(…, i)` that cuts packed columns.
 * Integer columns go as array literals (src/storage/array-literal.ts).
 */
const ROW = sql.ref('u.i')

/** Rows per statement: a statement carries a fixed number of parameters however many rows. */
const CHUNK = 5000

interface TransferPart {
  tx: Packed
  contract: Packed
  from: Packed
  to: Packed
  /** Array literals: block, log index, batch index, timestamp, standard, token id, value. */
  ints: [string, string, string, string, string, string, string]
}

/** Token transfers ready to write: see transferWrite. */
export interface TransferWrite {
  parts: TransferPart[]
  holders: { holder: Packed; contract: Packed; block: string } | undefined
  nft: NftDelta[]
}

/**
 * Transfers and the holdings derived from them, ready for writeTransfers. Rows go in as
 * parallel arrays through `unnest`; addresses and hashes as one packed bytea per column, cut by
 * row number (src/storage/bytea.ts).
 */
export function transferWrite(
  transfers: StoredTransfer[],
  /**
   * A history scan of one address (history-scan.ts): holdings change for that address only —
   * the other side's own history is not known until its scan, which applies that side.
   */
  only?: { holder: Address },
): TransferWrite {
  const parts: TransferPart[] = []
  for (let i = 0; i < transfers.length; i += CHUNK) {
    const part = transfers.slice(i, i + CHUNK)
    parts.push({
      tx: packed(
        part.map((t) => t.txHash),
        32,
      ),
      contract: packed(
        part.map((t) => t.contract),
        20,
      ),
      from: packed(
        part.map((t) => t.from),
        20,
      ),
      to: packed(
        part.map((t) => t.to),
        20,
      ),
      ints: [
        intArray(part.map((t) => t.blockNumber)),
        intArray(part.map((t) => t.logIndex)),
        intArray(part.map((t) => t.batchIndex)),
        intArray(part.map((t) => t.timestamp)),
        intArray(part.map((t) => STANDARD_CODE[t.standard])),
        intArray(part.map((t) => t.tokenId ?? 0n)),
        intArray(part.map((t) => t.value)),
      ],
    })
  }
  const deltas = nftDeltas(transfers, 1n)
  return {
    parts,
    holders: holderRows(transfers, only?.holder),
    nft: only ? deltas.filter((d) => d.holder === only.holder) : deltas,
  }
}

/** Writes transfers made ready by transferWrite. */
export async function writeTransfers(db: Db, network: string, w: TransferWrite): Promise<void> {
  if (w.parts.length === 0) return
  const net = await ensureNetworkId(db, network)
  for (const p of w.parts) {
    const [b, l, bi, ts, st, id, v] = p.ints
    await sql`
      insert into token_transfers (network_id, block_number, log_index, batch_index,
        block_timestamp, tx_hash, standard, contract, from_address, to_address, token_id, value)
      select ${net}::smallint, b, l, bi, ts, ${unpack(p.tx, 32, ROW)}, st, ${unpack(p.contract, 20, ROW)},
        ${unpack(p.from, 20, ROW)}, ${unpack(p.to, 20, ROW)}, id, v
      from unnest(${b}::bigint[], ${l}::integer[], ${bi}::integer[], ${ts}::bigint[],
        ${st}::smallint[], ${id}::numeric[], ${v}::numeric[]) with ordinality as u(b, l, bi, ts, st, id, v, i)
      on conflict do nothing`.execute(db)
  }
  if (w.holders) {
    const h = w.holders
    await sql`
      insert into token_holders (network_id, holder, contract, first_block)
      select ${net}::smallint, ${unpack(h.holder, 20, ROW)}, ${unpack(h.contract, 20, ROW)}, b
      from unnest(${h.block}::bigint[]) with ordinality as u(b, i)
      on conflict do nothing`.execute(db)
  }
  await applyNftDeltas(db, net, w.nft)
}

/** Writes transfers and the holdings derived from them (transferWrite, then writeTransfers). */
export async function saveTransfers(
  db: Db,
  network: string,
  transfers: StoredTransfer[],
  only?: { holder: Address },
): Promise<void> {
  if (transfers.length === 0) return
  await writeTransfers(db, network, transferWrite(transfers, only))
}

interface NativePart {
  tx: Packed
  from: Packed
  to: Packed
  /** Array literals: block, tx index, trace index, timestamp, category, value. */
  ints: [string, string, string, string, string, string]
  paths: (string | null)[]
}

/** Native transfers ready to write: see nativeWrite. */
export type NativeWrite = NativePart[]

/** Native transfers ready to write, as parallel arrays like transferWrite's. */
export function nativeWrite(rows: StoredNativeTransfer[]): NativeWrite {
  const parts: NativePart[] = []
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK)
    parts.push({
      tx: packed(
        part.map((t) => t.txHash),
        32,
      ),
      from: packed(
        part.map((t) => t.from),
        20,
      ),
      to: packed(
        part.map((t) => t.to),
        20,
      ),
      ints: [
        intArray(part.map((t) => t.blockNumber)),
        intArray(part.map((t) => t.txIndex)),
        intArray(part.map((t) => t.traceIndex)),
        intArray(part.map((t) => t.timestamp)),
        intArray(part.map((t) => CATEGORY_CODE[t.category])),
        intArray(part.map((t) => t.value)),
      ],
      paths: part.map((t) => t.tracePath),
    })
  }
  return parts
}

/** Writes native transfers made ready by nativeWrite. */
export async function writeNativeTransfers(db: Db, network: string, parts: NativeWrite): Promise<void> {
  if (parts.length === 0) return
  const net = await ensureNetworkId(db, network)
  for (const p of parts) {
    const [b, ti, tr, ts, cat, v] = p.ints
    await sql`
      insert into native_transfers (network_id, block_number, tx_index, trace_index,
        block_timestamp, tx_hash, category, trace_path, from_address, to_address, value)
      select ${net}::smallint, b, ti, tr, ts, ${unpack(p.tx, 32, ROW)}, cat, path, ${unpack(p.from, 20, ROW)},
        ${unpack(p.to, 20, ROW)}, v
      from unnest(${b}::bigint[], ${ti}::integer[], ${tr}::integer[], ${ts}::bigint[], ${cat}::smallint[],
        ${p.paths}::text[], ${v}::numeric[]) with ordinality as u(b, ti, tr, ts, cat, path, v, i)
      on conflict do nothing`.execute(db)
  }
}

/** Writes native transfers (nativeWrite, then writeNativeTransfers). */
export async function saveNativeTransfers(
  db: Db,
  network: string,
  rows: StoredNativeTransfer[],
): Promise<void> {
  await writeNativeTransfers(db, network, nativeWrite(rows))
}

/** The (holder, contract) pairs of ERC-20 transfers, each with the first block it is seen in. */
function holderRows(transfers: StoredTransfer[], onlyHolder?: Address): TransferWrite['holders'] {
  // Blocks arrive in ascending order, so the first sighting kept here is the earliest one. Seen
  // pairs by contract, then holder: a key built of the two addresses was a new 80-character
  // string for every side of every transfer.
  const seen = new Map<Address, Set<Address>>()
  const rows: { holder: Address; contract: Address; block: bigint }[] = []
  const see = (holder: Address, t: StoredTransfer, holders: Set<Address>) => {
    if (holder === ZERO_ADDRESS || (onlyHolder !== undefined && holder !== onlyHolder)) return
    if (holders.has(holder)) return
    holders.add(holder)
    rows.push({ holder, contract: t.contract, block: t.blockNumber })
  }
  for (const t of transfers) {
    if (t.standard !== 'ERC20') continue
    let holders = seen.get(t.contract)
    if (!holders) {
      holders = new Set()
      seen.set(t.contract, holders)
    }
    see(t.from, t, holders)
    see(t.to, t, holders)
  }
  if (rows.length === 0) return undefined
  return {
    holder: packed(
      rows.map((r) => r.holder),
      20,
    ),
    contract: packed(
      rows.map((r) => r.contract),
      20,
    ),
    block: intArray(rows.map((r) => r.block)),
  }
}

export interface NftDelta {
  contract: string
  tokenId: string
  holder: string
  standard: string
  delta: bigint
}

/** Per-(contract, id, holder) balance changes; `sign` -1 undoes them. Mint/burn sides skipped. */
export function nftDeltas(
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

export async function applyNftDeltas(db: Db, net: number, deltas: NftDelta[]): Promise<void> {
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
