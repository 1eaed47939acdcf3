import type { Kysely } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'

export interface TokenMetadataTable {
  network: string
  contract: string
  name: string | null
  symbol: string | null
  decimals: number | null
  fetched_at: Date
}

export interface TokenTables {
  token_metadata: TokenMetadataTable
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
  return rows.map((r) => r.contract as Address)
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
  return rows.map((r) => ({ ...r, contract: r.contract as Address }))
}

export async function saveMetas(db: Db, network: string, metas: readonly TokenMeta[]): Promise<void> {
  if (metas.length === 0) return
  await db
    .insertInto('token_metadata')
    .values(metas.map((m) => ({ network, ...m, fetched_at: new Date() })))
    .onConflict((oc) => oc.columns(['network', 'contract']).doNothing())
    .execute()
}
