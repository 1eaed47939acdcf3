import type { Kysely } from 'kysely'
import type { Network } from '../chains/registry.ts'
import { formatUnits } from '../common/decimal.ts'
import { invalidRequest } from '../errors.ts'
import type { Database } from '../storage/schema.ts'
import type { TokenMeta } from '../tokens/store.ts'
import type { Address } from '../types.ts'
import { decodeCursor, encodeCursor } from './cursor.ts'
import {
  type AddressFilter,
  CATEGORIES,
  type Category,
  readTransfers,
  TOKEN_CATEGORIES,
  type TransferQuery,
  type TransferRow,
} from './store.ts'

export interface TransferServiceDeps {
  db: Kysely<Database>
  /** Token name, symbol and decimals (the Token API's store and cache: src/tokens/service.ts). */
  metas: (net: Network, contracts: readonly Address[]) => Promise<Map<Address, TokenMeta>>
  /**
   * Why the index holds no internal (trace-level) transfers for a network, or null when it does
   * (the indexer knows: its upstream answers a trace method or not).
   */
  internalUnavailable: (net: Network) => Promise<string | null> | string | null
}

export type Direction = 'from' | 'to' | 'both'

export interface TransferListQuery {
  direction: Direction
  /** Undefined: every category the network has. */
  categories: readonly Category[] | undefined
  fromBlock?: bigint
  toBlock?: bigint
  contract?: Address
  order: 'asc' | 'desc'
  limit: number
  cursor?: string
}

/** One row of `GET /v1/transfers`: snake_case, chain quantities as decimal strings. */
export interface TransferItem {
  category: Category
  block_number: number
  block_timestamp: number
  tx_hash: string
  tx_index: number | null
  trace_index: number | null
  log_index: number | null
  batch_index: number | null
  from: string
  to: string | null
  contract: string | null
  token_id: string | null
  value: string
  formatted_value: string | null
  symbol: string | null
  decimals: number | null
}

export interface TransferList {
  address: Address
  chain: string
  transfers: TransferItem[]
  next_cursor: string | null
}

/** The branches of one address in a direction; the to-branch of "both" leaves out self-sends. */
export function addressBranches(address: Address, direction: Direction): AddressFilter[] {
  if (direction === 'from') return [{ from: address }]
  if (direction === 'to') return [{ to: address }]
  return [{ from: address }, { to: address, notFrom: address }]
}

/**
 * Halyard's transfer API and the reads behind `alchemy_getAssetTransfers`: native and token
 * transfers of the indexer's tables, newest first by default, paged by keyset cursor.
 */
export class TransferService {
  constructor(readonly deps: TransferServiceDeps) {}

  get db(): Kysely<Database> {
    return this.deps.db
  }

  /** A 400 when `internal` is asked where the index has none, naming the network and why. */
  async checkInternal(net: Network, categories: readonly Category[]): Promise<string | null> {
    if (!categories.includes('internal')) return null
    const why = await this.deps.internalUnavailable(net)
    return why === null ? null : `the internal category is not available on ${net.slug}: ${why}`
  }

  async list(net: Network, address: Address, q: TransferListQuery): Promise<TransferList> {
    let categories = q.categories
    if (categories === undefined) {
      // The default is everything this network's index holds: no refusal for a category not asked.
      categories =
        (await this.deps.internalUnavailable(net)) === null
          ? CATEGORIES
          : CATEGORIES.filter((c) => c !== 'internal')
    } else {
      const refusal = await this.checkInternal(net, categories)
      if (refusal) throw invalidRequest(refusal)
    }
    // A token contract names token transfers: native rows have no contract to match.
    if (q.contract !== undefined) categories = categories.filter((c) => TOKEN_CATEGORIES.includes(c))
    let after: TransferQuery['after']
    if (q.cursor !== undefined) {
      after = decodeCursor(q.cursor)
      if (!after) throw invalidRequest('cursor is not a cursor this API returned (pass next_cursor as is)')
    }
    const rows =
      categories.length === 0
        ? []
        : await readTransfers(
            this.deps.db,
            {
              network: net.slug,
              categories,
              fromBlock: q.fromBlock,
              toBlock: q.toBlock,
              contracts: q.contract === undefined ? undefined : [q.contract],
              order: q.order,
              after,
              limit: q.limit + 1,
            },
            addressBranches(address, q.direction),
          )
    const shown = rows.slice(0, q.limit)
    const last = shown.at(-1)
    const metas = await this.tokenMetas(net, shown)
    return {
      address,
      chain: net.slug,
      transfers: shown.map((r) => item(net, r, metas)),
      next_cursor: rows.length > q.limit && last ? encodeCursor(last) : null,
    }
  }

  /** Metadata of the token contracts among `rows` (memory, database, then one multicall). */
  async tokenMetas(net: Network, rows: readonly TransferRow[]): Promise<Map<Address, TokenMeta>> {
    const contracts = [...new Set(rows.flatMap((r) => (r.contract === null ? [] : [r.contract])))]
    return contracts.length === 0 ? new Map() : this.deps.metas(net, contracts)
  }
}

function item(net: Network, r: TransferRow, metas: Map<Address, TokenMeta>): TransferItem {
  const native = r.source === 0
  const meta = r.contract === null ? undefined : metas.get(r.contract)
  const decimals = native
    ? net.config.nativeCurrency.decimals
    : r.category === 'erc20'
      ? (meta?.decimals ?? null)
      : null
  return {
    category: r.category,
    block_number: Number(r.block),
    block_timestamp: Number(r.timestamp),
    tx_hash: r.txHash,
    tx_index: native ? r.a : null,
    trace_index: native ? r.b : null,
    log_index: native ? null : r.a,
    batch_index: native ? null : r.b,
    from: r.from,
    to: r.to,
    contract: r.contract,
    token_id: r.tokenId === null ? null : r.tokenId.toString(),
    value: r.value.toString(),
    formatted_value: decimals === null ? null : formatUnits(r.value, decimals),
    symbol: native ? net.config.nativeCurrency.symbol : (meta?.symbol ?? null),
    decimals,
  }
}
