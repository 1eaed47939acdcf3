import { type Kysely, sql } from 'kysely'
import { bytea } from '../storage/bytea.ts'
import { networkIdOf } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Page } from '../types.ts'
import type { Trait } from './parse.ts'

export type NftStandard = 'ERC721' | 'ERC1155'

export interface NftContractsTable {
  network: string
  contract: Address
  standard: string
  name: string | null
  symbol: string | null
  contract_uri: string | null
  collection: unknown
  collection_error: string | null
  collection_fetched_at: Date | null
  detected_at: Date
}

export interface NftMetadataTable {
  network: string
  contract: Address
  token_id: string
  token_uri: string | null
  metadata: unknown
  name: string | null
  description: string | null
  image: string | null
  traits: unknown
  error: string | null
  fetched_at: Date
  refreshed_at: Date | null
}

export interface NftTables {
  nft_contracts: NftContractsTable
  nft_metadata: NftMetadataTable
}

declare module '../storage/schema.ts' {
  interface Database extends NftTables {}
}

type Db = Kysely<Database>

export interface StoredContract {
  standard: NftStandard
  name: string | null
  symbol: string | null
  contractUri: string | null
  collection: Record<string, unknown> | null
  collectionError: string | null
  collectionFetchedAt: Date | null
}

export async function readContract(
  db: Db,
  network: string,
  contract: Address,
): Promise<StoredContract | null> {
  const r = await db
    .selectFrom('nft_contracts')
    .selectAll()
    .where('network', '=', network)
    .where('contract', '=', contract)
    .executeTakeFirst()
  if (!r) return null
  return {
    standard: r.standard as NftStandard,
    name: r.name,
    symbol: r.symbol,
    contractUri: r.contract_uri,
    collection: asObject(r.collection),
    collectionError: r.collection_error,
    collectionFetchedAt: r.collection_fetched_at,
  }
}

export async function saveContract(
  db: Db,
  network: string,
  contract: Address,
  c: { standard: NftStandard; name: string | null; symbol: string | null },
): Promise<void> {
  await db
    .insertInto('nft_contracts')
    .values({ network, contract, ...c, detected_at: new Date() })
    .onConflict((oc) => oc.columns(['network', 'contract']).doNothing())
    .execute()
}

export async function saveCollectionDoc(
  db: Db,
  network: string,
  contract: Address,
  doc: { uri: string | null; collection: Record<string, unknown> | null; error: string | null },
): Promise<void> {
  await db
    .updateTable('nft_contracts')
    .set({
      contract_uri: doc.uri,
      collection: doc.collection === null ? null : sql`${JSON.stringify(doc.collection)}::jsonb`,
      collection_error: doc.error,
      collection_fetched_at: new Date(),
    })
    .where('network', '=', network)
    .where('contract', '=', contract)
    .execute()
}

/** The standard the indexer saw this contract's transfers under, if any holding is indexed. */
export async function indexedStandard(
  db: Db,
  network: string,
  contract: Address,
): Promise<NftStandard | null> {
  const r = await db
    .selectFrom('nft_balances')
    .select('standard')
    .where('network_id', '=', networkIdOf(network))
    .where('contract', '=', bytea(contract))
    .limit(1)
    .executeTakeFirst()
  return r ? (r.standard as NftStandard) : null
}

/**
 * Current holders and distinct token ids held, from the index (minted minus burned). Only
 * positive balances count: an index started after a contract's first mints can see a token
 * leave an address it never saw arrive.
 */
export async function indexedCounts(db: Db, network: string, contract: Address) {
  const r = await db
    .selectFrom('nft_balances')
    .select([
      sql<string>`count(distinct holder)`.as('owners'),
      sql<string>`count(distinct token_id)`.as('tokens'),
    ])
    .where('network_id', '=', networkIdOf(network))
    .where('contract', '=', bytea(contract))
    .where('balance', '>', '0')
    .executeTakeFirstOrThrow()
  return { owners: Number(r.owners), tokens: Number(r.tokens) }
}

/** Whether the index holds a non-zero balance of this token (ERC-1155 existence). */
export async function tokenHeld(
  db: Db,
  network: string,
  contract: Address,
  tokenId: bigint,
): Promise<boolean> {
  const r = await db
    .selectFrom('nft_balances')
    .select('holder')
    .where('network_id', '=', networkIdOf(network))
    .where('contract', '=', bytea(contract))
    .where('token_id', '=', tokenId.toString())
    .where('balance', '>', '0')
    .limit(1)
    .executeTakeFirst()
  return r !== undefined
}

export interface StoredMetadata {
  tokenUri: string | null
  metadata: Record<string, unknown> | null
  name: string | null
  description: string | null
  image: string | null
  traits: Trait[]
  error: string | null
  fetchedAt: Date
}

export async function readMetadata(
  db: Db,
  network: string,
  contract: Address,
  tokenId: bigint,
): Promise<StoredMetadata | null> {
  const r = await db
    .selectFrom('nft_metadata')
    .selectAll()
    .where('network', '=', network)
    .where('contract', '=', contract)
    .where('token_id', '=', tokenId.toString())
    .executeTakeFirst()
  if (!r) return null
  return {
    tokenUri: r.token_uri,
    metadata: asObject(r.metadata),
    name: r.name,
    description: r.description,
    image: r.image,
    traits: Array.isArray(r.traits) ? (r.traits as Trait[]) : [],
    error: r.error,
    fetchedAt: r.fetched_at,
  }
}

export async function saveMetadata(
  db: Db,
  network: string,
  contract: Address,
  tokenId: bigint,
  m: Omit<StoredMetadata, 'fetchedAt'>,
  /** Set by `?refresh=true`: starts the token's refresh interval. */
  refreshed = false,
): Promise<void> {
  const values = {
    ...(refreshed ? { refreshed_at: new Date() } : {}),
    token_uri: m.tokenUri,
    metadata: m.metadata === null ? null : sql`${JSON.stringify(m.metadata)}::jsonb`,
    name: m.name,
    description: m.description,
    image: m.image,
    traits: sql`${JSON.stringify(m.traits)}::jsonb`,
    error: m.error,
    fetched_at: new Date(),
  }
  await db
    .insertInto('nft_metadata')
    .values({ network, contract, token_id: tokenId.toString(), ...values })
    .onConflict((oc) => oc.columns(['network', 'contract', 'token_id']).doUpdateSet(values))
    .execute()
}

/**
 * Claims the right to refresh one token's metadata: at most once per `intervalSeconds` per
 * token, across instances (one conditional UPDATE). Returns the seconds to wait when refused.
 */
export async function claimRefresh(
  db: Db,
  network: string,
  contract: Address,
  tokenId: bigint,
  intervalSeconds: number,
): Promise<{ ok: true } | { ok: false; retryAfter: number }> {
  const claimed = await db
    .updateTable('nft_metadata')
    .set({ refreshed_at: sql`now()` })
    .where('network', '=', network)
    .where('contract', '=', contract)
    .where('token_id', '=', tokenId.toString())
    .where((eb) =>
      eb.or([
        eb('refreshed_at', 'is', null),
        eb('refreshed_at', '<=', sql<Date>`now() - make_interval(secs => ${intervalSeconds})`),
      ]),
    )
    .executeTakeFirst()
  if (Number(claimed.numUpdatedRows) > 0) return { ok: true }
  const row = await db
    .selectFrom('nft_metadata')
    .select(
      sql<string>`ceil(extract(epoch from refreshed_at + make_interval(secs => ${intervalSeconds}) - now()))`.as(
        'wait',
      ),
    )
    .where('network', '=', network)
    .where('contract', '=', contract)
    .where('token_id', '=', tokenId.toString())
    .executeTakeFirst()
  // No row yet: nothing was ever fetched, so this is the first fetch, not a refresh.
  if (!row) return { ok: true }
  return { ok: false, retryAfter: Math.max(1, Number(row.wait)) }
}

export interface OwnedRow {
  contract: Address
  tokenId: bigint
  standard: NftStandard
  balance: bigint
  name: string | null
  image: string | null
  /** Whether metadata was ever fetched for it (a row in nft_metadata). */
  fetched: boolean
  collectionName: string | null
  /** Whether the contract was ever looked at (a row in nft_contracts). */
  contractKnown: boolean
}

/** Current holdings of `holder` from the index, with whatever metadata is cached, and the total. */
export async function ownedPage(
  db: Db,
  network: string,
  holder: Address,
  page: Page,
): Promise<{ rows: OwnedRow[]; total: number }> {
  // nft_balances keys by network id and bytea (migration 0160); the metadata caches by slug and
  // hex text: the join converts the balance row's side.
  const net = networkIdOf(network)
  const [rows, count] = await Promise.all([
    sql<{
      contract: Address
      token_id: string
      standard: string
      balance: string
      name: string | null
      image: string | null
      fetched_at: Date | null
      collection_name: string | null
      contract_standard: string | null
    }>`
      select b.hex as contract, b.token_id::text as token_id, b.standard, b.balance::text as balance,
        m.name, m.image, m.fetched_at, c.name as collection_name, c.standard as contract_standard
      from (
        select '0x' || encode(contract, 'hex') as hex, token_id, standard, balance from nft_balances
        where network_id = ${net} and holder = ${bytea(holder)} and balance > 0
        order by contract, token_id
        limit ${page.limit} offset ${(page.page - 1) * page.limit}
      ) b
      left join nft_metadata m on m.network = ${network} and m.contract = b.hex and m.token_id = b.token_id
      left join nft_contracts c on c.network = ${network} and c.contract = b.hex
      order by b.hex, b.token_id`.execute(db),
    db
      .selectFrom('nft_balances')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('network_id', '=', net)
      .where('holder', '=', bytea(holder))
      .where('balance', '>', '0')
      .executeTakeFirstOrThrow(),
  ])
  return {
    total: Number(count.n),
    rows: rows.rows.map((r) => ({
      contract: r.contract,
      tokenId: BigInt(r.token_id),
      standard: r.standard as NftStandard,
      balance: BigInt(r.balance),
      name: r.name,
      image: r.image,
      fetched: r.fetched_at !== null,
      collectionName: r.collection_name,
      contractKnown: r.contract_standard !== null,
    })),
  }
}

/** A JSON object column (as text on PGlite, parsed on PostgreSQL), or null for anything else. */
export function asObject(v: unknown): Record<string, unknown> | null {
  if (typeof v === 'string') {
    try {
      return asObject(JSON.parse(v))
    } catch {
      return null
    }
  }
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null
}
