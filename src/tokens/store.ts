import type { Kysely } from 'kysely'
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
    .where('network', '=', network)
    .where('holder', '=', holder)
    .orderBy('first_block')
    .orderBy('contract')
    .execute()
  return rows.map((r) => r.contract)
}

/**
 * One page of `touchedContracts`, in the same order: the `limit` contracts after `after` (a
 * contract of an earlier page; undefined for the first), and whether more follow. 'unknown' when
 * `after` is not one of the holder's contracts. Keyset on (first_block, contract), read in that
 * order from index token_holders_by_first_block (migration 0120): a page reads its own rows only.
 */
export async function touchedContractsPage(
  db: Db,
  network: string,
  holder: Address,
  after: Address | undefined,
  limit: number,
): Promise<{ contracts: Address[]; more: boolean } | 'unknown'> {
  let q = db
    .selectFrom('token_holders')
    .select('contract')
    .where('network', '=', network)
    .where('holder', '=', holder)
  if (after !== undefined) {
    const key = await db
      .selectFrom('token_holders')
      .select('first_block')
      .where('network', '=', network)
      .where('holder', '=', holder)
      .where('contract', '=', after)
      .executeTakeFirst()
    if (!key) return 'unknown'
    // A row comparison, not its expansion into or/and: PostgreSQL bounds the index scan with it.
    q = q.where((eb) => eb(eb.refTuple('first_block', 'contract'), '>', eb.tuple(key.first_block, after)))
  }
  const rows = await q
    .orderBy('first_block')
    .orderBy('contract')
    .limit(limit + 1)
    .execute()
  return { contracts: rows.slice(0, limit).map((r) => r.contract), more: rows.length > limit }
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
