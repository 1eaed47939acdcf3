import { type Kysely, sql } from 'kysely'
import { bytea, bytesToHex } from '../storage/bytea.ts'
import { networkIdOf } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'

export interface TokenMetadataTable {
  network: string
  contract: Address
  name: string | null
  symbol: string | null
  decimals: number | null
  fetched_at: Date
}

export interface TokenTables {
  token_metadata: TokenMetadataTable
}

declare module '../storage/schema.ts' {
  interface Database extends TokenTables {}
}

export interface TokenMeta {
  contract: Address
  name: string | null
  symbol: string | null
  decimals: number | null
}

type Db = Kysely<Database>

/** ERC-20 contracts `holder` ever sent or received, earliest first. */
export async function touchedContracts(db: Db, network: string, holder: Address): Promise<Address[]> {
  const rows = await db
    .selectFrom('token_holders')
    .select('contract')
    .where('network_id', '=', networkIdOf(network))
    .where('holder', '=', bytea(holder))
    .orderBy('first_block')
    .orderBy('contract')
    .execute()
  return rows.map((r) => bytesToHex<Address>(r.contract))
}

/**
 * One page of `touchedContracts`, in the same order: the `limit` contracts after `after` (a
 * contract of an earlier page; undefined for the first), and whether more follow. 'unknown' when
 * `after` is not one of the holder's contracts. Keyset on (first_block, contract), read in that
 * order from index token_holders_by_first_block (migrations 0120, 0160): a page reads its own
 * rows only. Contracts are bytea: their byte order is the order of their lowercase hex.
 */
export async function touchedContractsPage(
  db: Db,
  network: string,
  holder: Address,
  after: Address | undefined,
  limit: number,
): Promise<{ contracts: Address[]; more: boolean } | 'unknown'> {
  const net = networkIdOf(network)
  let q = db
    .selectFrom('token_holders')
    .select('contract')
    .where('network_id', '=', net)
    .where('holder', '=', bytea(holder))
  if (after !== undefined) {
    const key = await db
      .selectFrom('token_holders')
      .select('first_block')
      .where('network_id', '=', net)
      .where('holder', '=', bytea(holder))
      .where('contract', '=', bytea(after))
      .executeTakeFirst()
    if (!key) return 'unknown'
    // A row comparison, not its expansion into or/and: PostgreSQL bounds the index scan with it.
    q = q.where(sql<boolean>`(first_block, contract) > (${key.first_block}::bigint, ${bytea(after)})`)
  }
  const rows = await q
    .orderBy('first_block')
    .orderBy('contract')
    .limit(limit + 1)
    .execute()
  return {
    contracts: rows.slice(0, limit).map((r) => bytesToHex<Address>(r.contract)),
    more: rows.length > limit,
  }
}

export async function readMetas(
  db: Db,
  network: string,
  contracts: readonly Address[],
): Promise<TokenMeta[]> {
  if (contracts.length === 0) return []
  const rows = await db
    .selectFrom('token_metadata')
    .select(['contract', 'name', 'symbol', 'decimals'])
    .where('network', '=', network)
    .where('contract', 'in', contracts)
    .execute()
  return rows
}

export async function saveMetas(db: Db, network: string, metas: readonly TokenMeta[]): Promise<void> {
  if (metas.length === 0) return
  await db
    .insertInto('token_metadata')
    .values(metas.map((m) => ({ network, ...m, fetched_at: new Date() })))
    .onConflict((oc) => oc.columns(['network', 'contract']).doNothing())
    .execute()
}
