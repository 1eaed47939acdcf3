import { type Kysely, sql } from 'kysely'
import { asObject, type NftStandard } from '../nfts/store.ts'
import { bytea } from '../storage/bytea.ts'
import { networkIdOf } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'

/**
 * Keyset pages over the index's current NFT holdings (nft_balances, positive balances only)
 * with whatever metadata is cached, for the Alchemy-compatible NFT API. Never OFFSET: a page
 * starts strictly after the last row of the one before.
 *
 * nft_balances keys by network id and bytea (migration 0160); the metadata caches key by slug
 * and hex text, so each join converts the balance row's side. bytea sorts as lowercase hex does:
 * the page orders and `after` bounds are those of the hex addresses.
 */

type Db = Kysely<Database>

/** A holding or a token with its cached metadata (null fields: not fetched yet). */
export interface TokenRow {
  contract: Address
  tokenId: bigint
  standard: NftStandard
  /** The holder's balance (owner lists); the sum over holders (contract lists). */
  balance: bigint
  tokenUri: string | null
  metadata: Record<string, unknown> | null
  name: string | null
  description: string | null
  image: string | null
  error: string | null
  fetchedAt: Date | null
  /** Whether metadata was ever fetched (a row in nft_metadata). */
  fetched: boolean
  /** Whether the contract was ever looked at (a row in nft_contracts). */
  contractKnown: boolean
  contractName: string | null
  contractSymbol: string | null
}

interface JoinedRow {
  contract: Address
  token_id: string
  standard: string
  balance: string
  token_uri: string | null
  metadata: unknown
  name: string | null
  description: string | null
  image: string | null
  error: string | null
  fetched_at: Date | string | null
  c_standard: string | null
  c_name: string | null
  c_symbol: string | null
}

function toTokenRow(r: JoinedRow): TokenRow {
  return {
    contract: r.contract,
    tokenId: BigInt(r.token_id),
    standard: r.standard as NftStandard,
    balance: BigInt(r.balance),
    tokenUri: r.token_uri,
    metadata: asObject(r.metadata),
    name: r.name,
    description: r.description,
    image: r.image,
    error: r.error,
    fetchedAt: r.fetched_at === null ? null : new Date(r.fetched_at),
    fetched: r.fetched_at !== null,
    contractKnown: r.c_standard !== null,
    contractName: r.c_name,
    contractSymbol: r.c_symbol,
  }
}

/** `limit` rows after `after` (contract, token id), and whether more follow. */
export async function ownedAfter(
  db: Db,
  network: string,
  holder: Address,
  o: { contracts?: readonly Address[]; after?: { contract: Address; tokenId: bigint }; limit: number },
): Promise<{ rows: TokenRow[]; more: boolean }> {
  const contracts = o.contracts ?? []
  const r = await sql<JoinedRow>`
    select b.hex as contract, b.token_id::text as token_id, b.standard, b.balance::text as balance,
      m.token_uri, m.metadata, m.name, m.description, m.image, m.error, m.fetched_at,
      c.standard as c_standard, c.name as c_name, c.symbol as c_symbol
    from (
      select '0x' || encode(contract, 'hex') as hex, contract, token_id, standard, balance from nft_balances
      where network_id = ${networkIdOf(network)} and holder = ${bytea(holder)} and balance > 0
        ${contracts.length > 0 ? sql`and contract in (${sql.join(contracts.map((c) => bytea(c)))})` : sql``}
        ${o.after ? sql`and (contract, token_id) > (${bytea(o.after.contract)}, ${o.after.tokenId.toString()}::numeric)` : sql``}
      order by contract, token_id
      limit ${o.limit + 1}
    ) b
    left join nft_metadata m on m.network = ${network} and m.contract = b.hex and m.token_id = b.token_id
    left join nft_contracts c on c.network = ${network} and c.contract = b.hex
    order by b.contract, b.token_id`.execute(db)
  return { rows: r.rows.slice(0, o.limit).map(toTokenRow), more: r.rows.length > o.limit }
}

/** How many holdings `holder` has (within `contracts` when given). */
export async function ownedCount(
  db: Db,
  network: string,
  holder: Address,
  contracts: readonly Address[] = [],
): Promise<number> {
  const r = await sql<{ n: string }>`
    select count(*)::text as n from nft_balances
    where network_id = ${networkIdOf(network)} and holder = ${bytea(holder)} and balance > 0
      ${contracts.length > 0 ? sql`and contract in (${sql.join(contracts.map((c) => bytea(c)))})` : sql``}`.execute(
    db,
  )
  return Number(r.rows[0]?.n ?? 0)
}

/** The contract's token ids with a holder, from `from` (inclusive), and whether more follow. */
export async function tokensFrom(
  db: Db,
  network: string,
  contract: Address,
  o: { from?: bigint; limit: number },
): Promise<{ rows: TokenRow[]; more: boolean }> {
  const r = await sql<JoinedRow>`
    select '0x' || encode(${bytea(contract)}, 'hex') as contract, t.token_id::text as token_id, t.standard, t.balance::text as balance,
      m.token_uri, m.metadata, m.name, m.description, m.image, m.error, m.fetched_at,
      c.standard as c_standard, c.name as c_name, c.symbol as c_symbol
    from (
      select token_id, min(standard) as standard, sum(balance) as balance
      from nft_balances
      where network_id = ${networkIdOf(network)} and contract = ${bytea(contract)} and balance > 0
        ${o.from === undefined ? sql`` : sql`and token_id >= ${o.from.toString()}::numeric`}
      group by token_id
      order by token_id
      limit ${o.limit + 1}
    ) t
    left join nft_metadata m on m.network = ${network} and m.contract = '0x' || encode(${bytea(contract)}, 'hex') and m.token_id = t.token_id
    left join nft_contracts c on c.network = ${network} and c.contract = '0x' || encode(${bytea(contract)}, 'hex')
    order by t.token_id`.execute(db)
  return { rows: r.rows.slice(0, o.limit).map(toTokenRow), more: r.rows.length > o.limit }
}

/** Holders of one token after `after`, in address order, and whether more follow. */
export async function tokenOwners(
  db: Db,
  network: string,
  contract: Address,
  tokenId: bigint,
  o: { after?: Address; limit: number },
): Promise<{ owners: Address[]; more: boolean }> {
  const r = await sql<{ holder: Address }>`
    select '0x' || encode(holder, 'hex') as holder from nft_balances
    where network_id = ${networkIdOf(network)} and contract = ${bytea(contract)}
      and token_id = ${tokenId.toString()}::numeric
      and balance > 0 ${o.after ? sql`and holder > ${bytea(o.after)}` : sql``}
    order by nft_balances.holder
    limit ${o.limit + 1}`.execute(db)
  const owners = r.rows.map((x) => x.holder)
  return { owners: owners.slice(0, o.limit), more: owners.length > o.limit }
}

/** Distinct holders of a contract after `after`, in address order, and whether more follow. */
export async function contractOwners(
  db: Db,
  network: string,
  contract: Address,
  o: { after?: Address; limit: number },
): Promise<{ owners: Address[]; more: boolean }> {
  const r = await sql<{ holder: Address }>`
    select '0x' || encode(holder, 'hex') as holder from (
      select distinct holder from nft_balances
      where network_id = ${networkIdOf(network)} and contract = ${bytea(contract)} and balance > 0
        ${o.after ? sql`and holder > ${bytea(o.after)}` : sql``}
      order by holder
      limit ${o.limit + 1}) h
    order by h.holder`.execute(db)
  const owners = r.rows.map((x) => x.holder)
  return { owners: owners.slice(0, o.limit), more: owners.length > o.limit }
}

/** How many distinct holders a contract has. */
export async function contractOwnerCount(db: Db, network: string, contract: Address): Promise<number> {
  const r = await sql<{ n: string }>`
    select count(distinct holder)::text as n from nft_balances
    where network_id = ${networkIdOf(network)} and contract = ${bytea(contract)} and balance > 0`.execute(db)
  return Number(r.rows[0]?.n ?? 0)
}

/**
 * The balances of the holders from `first` to `last` (a page of contractOwners, contiguous in
 * address order, so one range reads exactly them), by holder, token ids ascending.
 */
export async function balancesBetween(
  db: Db,
  network: string,
  contract: Address,
  first: Address,
  last: Address,
): Promise<Map<Address, { tokenId: bigint; balance: bigint }[]>> {
  const r = await sql<{ holder: Address; token_id: string; balance: string }>`
    select '0x' || encode(holder, 'hex') as holder, token_id::text as token_id, balance::text as balance
    from nft_balances
    where network_id = ${networkIdOf(network)} and contract = ${bytea(contract)} and balance > 0
      and holder >= ${bytea(first)} and holder <= ${bytea(last)}
    order by nft_balances.holder, token_id`.execute(db)
  const out = new Map<Address, { tokenId: bigint; balance: bigint }[]>()
  for (const x of r.rows) {
    const h = x.holder
    const list = out.get(h) ?? []
    if (list.length === 0) out.set(h, list)
    list.push({ tokenId: BigInt(x.token_id), balance: BigInt(x.balance) })
  }
  return out
}
