import { type Kysely, type RawBuilder, sql } from 'kysely'
import { bytea, hexOf } from '../storage/bytea.ts'
import { lookupNetworkId, networkIdOf } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'

/**
 * Keyset reads over the two transfer tables (migration 0100): native_transfers (external and
 * internal) and token_transfers (ERC-20/721/1155). One order for both: the position key
 * (block_number, source, a, b) with source 0 = native (tx_index, trace_index) and 1 = token
 * (log_index, batch_index). Within a block native rows come before token rows: the token table
 * has no tx_index, and a stable total order is what pagination needs.
 *
 * Each branch is one `ORDER BY … LIMIT` on an index whose leading column is fixed by equality
 * (halyard_addr_key(network, address), migration 0160; the primary key's network_id for a
 * whole-network read), compared as a row value against the cursor: PostgreSQL walks the index
 * range and stops after `limit` rows, whatever the depth. Never OFFSET. The key holds only the
 * address's first 6 bytes: the full address is rechecked on each row.
 */

export type Category = 'external' | 'internal' | 'erc20' | 'erc721' | 'erc1155'
export const CATEGORIES: readonly Category[] = ['external', 'internal', 'erc20', 'erc721', 'erc1155']
export const NATIVE_CATEGORIES: readonly Category[] = ['external', 'internal']
export const TOKEN_CATEGORIES: readonly Category[] = ['erc20', 'erc721', 'erc1155']
/** token_transfers.standard and native_transfers.category codes (migration 0160). */
const STANDARD: Record<number, Category> = { 20: 'erc20', 721: 'erc721', 1155: 'erc1155' }
const STANDARD_OF: Record<string, number> = { erc20: 20, erc721: 721, erc1155: 1155 }
const CATEGORY_OF: Record<string, number> = { external: 0, internal: 1 }

/** A position in the merged order. */
export interface Position {
  block: bigint
  source: 0 | 1
  a: number
  b: number
}

export interface TransferRow extends Position {
  timestamp: bigint
  txHash: Hash
  category: Category
  /** Token contract; null for native transfers. */
  contract: Address | null
  from: Address
  /** Null for a native contract creation whose address the upstream did not give. */
  to: Address | null
  tokenId: bigint | null
  value: bigint
}

/** Which rows one branch reads: fixed sender and/or receiver (neither = the whole network). */
export interface AddressFilter {
  from?: Address
  to?: Address
  /** Leave out rows sent by this address (the to-branch of "both": the from-branch has them). */
  notFrom?: Address
}

export interface TransferQuery {
  network: string
  /**
   * The network's id in `networks`, when the caller has it (readTransfers looks it up): a
   * constant lets the planner read the address key's statistics. Without it the SQL looks it up.
   */
  networkId?: number
  categories: readonly Category[]
  fromBlock?: bigint
  toBlock?: bigint
  /** Token contracts (token rows only; native rows are not filtered by it). */
  contracts?: readonly Address[]
  /** Drop rows whose value is 0 (ERC-721 rows always carry 1). */
  excludeZeroValue?: boolean
  order: 'asc' | 'desc'
  /** Strictly after this position in `order`. */
  after?: Position
  limit: number
}

type Db = Kysely<Database>

/** Integer columns cannot hold this: a bound that sorts after every row of its block. */
const INT_MAX = 2147483647

/**
 * The merged page over every branch, in one statement (one round trip): each branch reads at
 * most `limit` rows on its index, the outer sort merges those few and keeps the first `limit`.
 * A caller asking `limit + 1` learns whether a next page exists.
 */
export async function readTransfers(
  db: Db,
  q: TransferQuery,
  branches: readonly AddressFilter[],
): Promise<TransferRow[]> {
  const networkId = q.networkId ?? (await lookupNetworkId(db, q.network))
  if (networkId === null) return []
  const stmt = mergedSql({ ...q, networkId }, branches)
  if (!stmt) return []
  const { rows } = await stmt.execute(db)
  return rows.map(toRow)
}

/** The one statement of readTransfers (exported for EXPLAIN in the tests and the bench); null when no branch applies. */
export function mergedSql(q: TransferQuery, branches: readonly AddressFilter[]) {
  const native = q.categories.filter((c) => NATIVE_CATEGORIES.includes(c))
  const token = q.categories.filter((c) => TOKEN_CATEGORIES.includes(c))
  const parts: RawBuilder<RawRow>[] = []
  for (const f of branches) {
    if (native.length > 0) parts.push(branchSql(q, f, 0, native))
    if (token.length > 0) parts.push(branchSql(q, f, 1, token))
  }
  if (parts.length === 0) return null
  const dir = sql.raw(q.order === 'asc' ? 'asc' : 'desc')
  return sql<RawRow>`select * from (${sql.join(
    parts.map((p) => sql`(${p})`),
    sql` union all `,
  )}) merged order by block_number ${dir}, source ${dir}, a ${dir}, b ${dir} limit ${q.limit}`
}

export function comparePosition(x: Position, y: Position): number {
  if (x.block !== y.block) return x.block < y.block ? -1 : 1
  return x.source - y.source || x.a - y.a || x.b - y.b
}

/** The SQL of one branch (exported for EXPLAIN in the tests and the bench). */
export function branchSql(q: TransferQuery, f: AddressFilter, source: 0 | 1, cats: readonly Category[]) {
  const native = source === 0
  const table = sql.raw(native ? 'native_transfers' : 'token_transfers')
  const [colA, colB] = native ? ['tx_index', 'trace_index'] : ['log_index', 'batch_index']
  const key = sql.raw(`(block_number, ${colA}, ${colB})`)
  const dir = sql.raw(q.order === 'asc' ? 'asc' : 'desc')
  const net = q.networkId === undefined ? networkIdOf(q.network) : sql`${q.networkId}::smallint`
  const where: RawBuilder<unknown>[] = []
  // The key carries the network id in its top bits: equal keys are of one network.
  // The full address is rechecked (two addresses can share a key) inside coalesce(), which the
  // planner does not see through: were it to multiply the key's selectivity by the address's, it
  // would expect a handful of rows for an address with millions and sort them all.
  const byKey = (side: 'from_address' | 'to_address', a: Address) =>
    sql`halyard_addr_key(network_id, ${sql.raw(side)}) = halyard_addr_key(${net}, ${bytea(a)})
      and coalesce(${sql.raw(side)} = ${bytea(a)}, false)`
  if (f.from !== undefined) where.push(byKey('from_address', f.from))
  else if (f.to !== undefined) where.push(byKey('to_address', f.to))
  else where.push(sql`network_id = ${net}`)
  if (f.from !== undefined && f.to !== undefined)
    where.push(sql`coalesce(to_address = ${bytea(f.to)}, false)`)
  if (f.notFrom !== undefined) where.push(sql`from_address <> ${bytea(f.notFrom)}`)
  if (q.fromBlock !== undefined) where.push(sql`block_number >= ${q.fromBlock.toString()}`)
  if (q.toBlock !== undefined) where.push(sql`block_number <= ${q.toBlock.toString()}`)
  if (native) {
    if (cats.length < NATIVE_CATEGORIES.length)
      where.push(sql`category = ${CATEGORY_OF[cats[0] ?? 'external']}`)
  } else {
    if (cats.length < TOKEN_CATEGORIES.length)
      where.push(sql`standard in (${sql.join(cats.map((c) => STANDARD_OF[c]))})`)
    if (q.contracts && q.contracts.length > 0)
      where.push(sql`contract in (${sql.join(q.contracts.map((c) => bytea(c)))})`)
  }
  if (q.excludeZeroValue) where.push(sql`value <> 0`)
  if (q.after) {
    const [a, b] = boundWithin(q.after, source)
    const op = sql.raw(q.order === 'asc' ? '>' : '<')
    where.push(sql`${key} ${op} (${q.after.block.toString()}::bigint, ${a}::integer, ${b}::integer)`)
  }
  const cols = native
    ? sql`block_number, 0 as source, tx_index as a, trace_index as b, block_timestamp, ${hexOf('tx_hash')} as tx_hash,
        category, null as contract, ${hexOf('from_address')} as from_address, ${hexOf('to_address')} as to_address,
        null as token_id, value`
    : sql`block_number, 1 as source, log_index as a, batch_index as b, block_timestamp, ${hexOf('tx_hash')} as tx_hash,
        standard as category, ${hexOf('contract')} as contract, ${hexOf('from_address')} as from_address,
        ${hexOf('to_address')} as to_address, case when standard = 20 then null else token_id end as token_id, value`
  return sql<RawRow>`select ${cols} from ${table} where ${sql.join(where, sql` and `)}
    order by block_number ${dir}, ${sql.raw(colA)} ${dir}, ${sql.raw(colB)} ${dir} limit ${q.limit}`
}

/**
 * The cursor's (a, b) as seen from one table: the same source compares as is; the other source
 * sits wholly before (native) or after (token) it within the cursor's block.
 */
function boundWithin(after: Position, source: 0 | 1): [number, number] {
  if (after.source === source) return [after.a, after.b]
  // Native rows (0) sort before a token cursor in its block, token rows (1) after a native one:
  // past every row of the block, or before every row of it, whichever the order asks.
  return source < after.source ? [INT_MAX, INT_MAX] : [-1, -1]
}

/** A row of the union over token_transfers and native_transfers (indexer/store.ts types their columns). */
interface RawRow {
  block_number: string | number | bigint
  source: number
  a: number
  b: number
  block_timestamp: string | number | bigint
  tx_hash: Hash
  category: number
  contract: Address | null
  from_address: Address
  to_address: Address | null
  token_id: string | null
  value: string
}

function toRow(r: RawRow): TransferRow {
  const source = Number(r.source) === 1 ? 1 : 0
  return {
    block: BigInt(r.block_number),
    source,
    a: Number(r.a),
    b: Number(r.b),
    timestamp: BigInt(r.block_timestamp),
    txHash: r.tx_hash,
    category:
      source === 0
        ? Number(r.category) === 1
          ? 'internal'
          : 'external'
        : (STANDARD[Number(r.category)] ?? 'erc20'),
    contract: r.contract,
    from: r.from_address,
    to: r.to_address,
    tokenId: r.token_id === null ? null : BigInt(r.token_id),
    value: BigInt(r.value),
  }
}
