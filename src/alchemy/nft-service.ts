import type { Kysely } from 'kysely'
import type { z } from 'zod'
import { getCode, hasCode, nodeAnswered } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { Gate } from '../common/gate.ts'
import { HalyardError, invalidRequest } from '../errors.ts'
import { readCursor } from '../indexer/store.ts'
import type { NftMetadata, NftService } from '../nfts/service.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hex } from '../types.ts'
import { holderKey, ownedKey, tokenKey } from './nft-page-key.ts'
import type * as P from './nft-params.ts'
import {
  type AlchemyTokenType,
  type ContractView,
  checksum,
  contractFromCollection,
  contractShape,
  nftShape,
  type TokenView,
  unknownContract,
  type ValidAt,
} from './nft-shape.ts'
import * as store from './nft-store.ts'

/** Owners per page of getOwnersForContract: Alchemy's own page size, so small collections fit one page. */
export const OWNERS_PAGE = 50_000
/** Tokens or contracts looked at concurrently within one request (batches, a page's contracts). */
const CONCURRENCY = 8
const NOT_FETCHED = 'metadata not fetched yet: it is being fetched, ask again shortly'
/**
 * Lists embed each NFT's contract (name, supply…): reading it costs view calls and an owner
 * count over the whole collection, so an iterator's pages reuse it for a minute.
 */
const VIEW_TTL_MS = 60_000
const VIEW_CACHE_MAX = 1_000

type In<T extends z.ZodType> = z.output<T>

/**
 * Alchemy's NFT API v3 over Halyard's own data: holdings, owners and token lists from the index
 * (nft_balances), metadata and contracts through NftService (its cache and SSRF-safe fetch).
 */
export class AlchemyNftApi {
  private readonly views = new Map<string, { until: number; view: ContractView }>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly nfts: NftService,
  ) {}

  async nftMetadata(net: Network, p: In<typeof P.nftMetadata>) {
    const [meta, contract] = await Promise.all([
      this.tokenMetadata(net, p.contractAddress, p.tokenId, p.refreshCache),
      this.contract(net, p.contractAddress),
    ])
    return nftShape(contract, this.tokenFromMetadata(meta))
  }

  /** A batch answers every entry: one it cannot find says why in `raw.error` (a batch never fails for one token). */
  async nftMetadataBatch(net: Network, p: In<typeof P.nftMetadataBatch>) {
    const nfts = await mapLimit(p.tokens, async (t) => {
      const contract = await this.contractOrKind(net, t.contractAddress)
      try {
        const meta = await this.tokenMetadata(net, t.contractAddress, t.tokenId, p.refreshCache)
        return nftShape(contract, this.tokenFromMetadata(meta))
      } catch (err) {
        if (!(err instanceof HalyardError) || err.code !== 'not_found') throw err
        return nftShape(contract, missingToken(t.tokenId, contract.tokenType, err.message))
      }
    })
    return { nfts }
  }

  async contractMetadata(net: Network, p: In<typeof P.contractMetadata>) {
    return contractShape(await this.contract(net, p.contractAddress))
  }

  async contractMetadataBatch(net: Network, p: In<typeof P.contractMetadataBatch>) {
    const contracts = await mapLimit(p.contractAddresses, (c) => this.contractOrKind(net, c))
    return { contracts: contracts.map(contractShape) }
  }

  async nftsForOwner(net: Network, p: In<typeof P.forOwner>) {
    if (p.orderBy !== undefined && p.orderBy !== '')
      throw invalidRequest(
        `orderBy ${p.orderBy.slice(0, 40)} is not served: Halyard lists holdings by contract address and token id; omit orderBy`,
      )
    for (const [name, list] of [
      ['includeFilters', p.includeFilters],
      ['excludeFilters', p.excludeFilters],
    ] as const)
      if (list?.includes('AIRDROPS'))
        throw invalidRequest(`${name} AIRDROPS is not served: Halyard does not classify airdrops`)
    const after = p.pageKey === undefined ? undefined : ownedKey.decode(p.pageKey)
    const validAt = await this.validAt(net)
    // Halyard classifies nothing as spam: excluding spam removes nothing, only-spam is empty.
    if (p.includeFilters?.includes('SPAM')) return { ownedNfts: [], totalCount: 0, validAt, pageKey: null }
    const query = { contracts: p.contractAddresses, after, limit: p.pageSize }
    const read = () => store.ownedAfter(this.db, net.slug, p.owner, query)
    let page = await read()
    if (p.withMetadata && (await this.nfts.prefetch(net, page.rows))) page = await read()
    const last = page.rows.at(-1)
    const pageKey = page.more && last ? ownedKey.encode(last.contract, last.tokenId) : null
    const totalCount = await store.ownedCount(this.db, net.slug, p.owner, p.contractAddresses)
    const ownedNfts = p.withMetadata
      ? await this.withContracts(net, page.rows, (c, r) => ({
          ...nftShape(c, this.tokenFromRow(net, r)),
          balance: r.balance.toString(),
        }))
      : page.rows.map((r) => ({
          contractAddress: checksum(r.contract),
          tokenId: r.tokenId.toString(),
          balance: r.balance.toString(),
        }))
    return { ownedNfts, totalCount, validAt, pageKey }
  }

  async nftsForContract(net: Network, p: In<typeof P.forContract>) {
    const from = p.pageKey === undefined ? p.startToken : tokenKey.decode(p.pageKey)
    // A contract that is not an NFT contract is a 404 naming it, as on Halyard's own routes.
    const contract = await this.contract(net, p.contractAddress)
    const read = () => store.tokensFrom(this.db, net.slug, p.contractAddress, { from, limit: p.limit })
    let page = await read()
    if (p.withMetadata && (await this.nfts.prefetch(net, page.rows))) page = await read()
    const last = page.rows.at(-1)
    const pageKey = page.more && last ? tokenKey.encode(last.tokenId + 1n) : null
    const nfts = p.withMetadata
      ? page.rows.map((r) => nftShape(contract, this.tokenFromRow(net, r)))
      : page.rows.map((r) => ({ contractAddress: checksum(r.contract), tokenId: r.tokenId.toString() }))
    return { nfts, pageKey }
  }

  async ownersForNft(net: Network, p: In<typeof P.ownersForNft>) {
    const after = p.pageKey === undefined ? undefined : holderKey.decode(p.pageKey)
    const page = await store.tokenOwners(this.db, net.slug, p.contractAddress, p.tokenId, {
      after,
      limit: p.pageSize,
    })
    const last = page.owners.at(-1)
    return { owners: page.owners, pageKey: page.more && last ? holderKey.encode(last) : null }
  }

  async ownersForContract(net: Network, p: In<typeof P.ownersForContract>) {
    if (p.block !== undefined)
      throw invalidRequest('block is not served: owners are those of the indexed head; omit block')
    const after = p.pageKey === undefined ? undefined : holderKey.decode(p.pageKey)
    const page = await store.contractOwners(this.db, net.slug, p.contractAddress, {
      after,
      limit: OWNERS_PAGE,
    })
    const first = page.owners[0]
    const last = page.owners.at(-1)
    const pageKey = page.more && last ? holderKey.encode(last) : null
    const totalCount = p.includeCount
      ? { totalCount: await store.contractOwnerCount(this.db, net.slug, p.contractAddress) }
      : {}
    if (!p.withTokenBalances) return { owners: page.owners, ...totalCount, pageKey }
    const balances =
      first && last
        ? await store.balancesBetween(this.db, net.slug, p.contractAddress, first, last)
        : new Map<Address, { tokenId: bigint; balance: bigint }[]>()
    const owners = page.owners.map((ownerAddress) => ({
      ownerAddress,
      tokenBalances: (balances.get(ownerAddress) ?? []).map((b) => ({
        tokenId: b.tokenId.toString(),
        balance: b.balance.toString(),
      })),
    }))
    return { owners, ...totalCount, pageKey }
  }

  /** A token's metadata; a refresh refused by the per-token interval serves the cached copy (Alchemy's refreshCache is best effort). */
  private async tokenMetadata(
    net: Network,
    contract: Address,
    id: bigint,
    refresh: boolean,
  ): Promise<{ meta: NftMetadata; fetchedAt: Date }> {
    try {
      return await this.nfts.metadataFetched(net, contract, id, refresh)
    } catch (err) {
      if (refresh && err instanceof HalyardError && err.code === 'rate_limited')
        return this.nfts.metadataFetched(net, contract, id, false)
      throw err
    }
  }

  private tokenFromMetadata({ meta: m, fetchedAt }: { meta: NftMetadata; fetchedAt: Date }): TokenView {
    return {
      tokenId: BigInt(m.token_id),
      tokenType: m.standard,
      name: m.name,
      description: m.description,
      tokenUri: m.token_uri,
      image: m.image_url,
      imageGateway: m.image_gateway_url,
      metadata: m.metadata,
      error: m.metadata_error,
      fetchedAt,
    }
  }

  private tokenFromRow(net: Network, r: store.TokenRow): TokenView {
    return {
      tokenId: r.tokenId,
      tokenType: r.standard,
      name: r.name,
      description: r.description,
      tokenUri: r.tokenUri,
      image: r.image,
      imageGateway: this.nfts.imageGatewayUrl(net, r.image),
      metadata: r.metadata,
      error: r.fetched ? r.error : NOT_FETCHED,
      fetchedAt: r.fetchedAt,
    }
  }

  /** The contract, or a 404 naming why it is not an NFT contract. */
  private async contract(net: Network, address: Address): Promise<ContractView> {
    return contractFromCollection(await this.nfts.collection(net, address))
  }

  /** The contract, or what it is instead (Alchemy's NOT_A_CONTRACT / NO_SUPPORTED_NFT_STANDARD). */
  private async contractOrKind(net: Network, address: Address): Promise<ContractView> {
    try {
      return await this.contract(net, address)
    } catch (err) {
      if (!(err instanceof HalyardError) || err.code !== 'not_found') throw err
      return unknownContract(address, await this.kindOf(net, address))
    }
  }

  private async kindOf(net: Network, address: Address): Promise<AlchemyTokenType> {
    let code: Hex
    try {
      code = await getCode(net, address)
    } catch (err) {
      // The node answered, but not with code: the kind stays unknown. Unreachable fails the call.
      if (nodeAnswered(err)) return 'UNKNOWN'
      throw err
    }
    return hasCode(code) ? 'NO_SUPPORTED_NFT_STANDARD' : 'NOT_A_CONTRACT'
  }

  /**
   * Maps a page's rows with their contracts, each contract read once. A contract that cannot be
   * read now (upstream down) is described from the index rather than failing the page.
   */
  private async withContracts<T>(
    net: Network,
    rows: readonly store.TokenRow[],
    f: (c: ContractView, r: store.TokenRow) => T,
  ): Promise<T[]> {
    const firsts = new Map<Address, store.TokenRow>()
    for (const r of rows) if (!firsts.has(r.contract)) firsts.set(r.contract, r)
    const views = await mapLimit([...firsts.values()], async (r) => {
      const key = `${net.slug}:${r.contract}`
      const cached = this.views.get(key)
      if (cached && cached.until > Date.now()) return cached.view
      try {
        const view = await this.contract(net, r.contract)
        if (this.views.size >= VIEW_CACHE_MAX) this.views.clear()
        this.views.set(key, { until: Date.now() + VIEW_TTL_MS, view })
        return view
      } catch {
        return { ...unknownContract(r.contract, r.standard), name: r.contractName, symbol: r.contractSymbol }
      }
    })
    const byAddress = new Map(views.map((v) => [v.address, v]))
    return rows.map((r) => f(byAddress.get(r.contract) ?? unknownContract(r.contract, r.standard), r))
  }

  private async validAt(net: Network): Promise<ValidAt> {
    const c = await readCursor(this.db, net.slug)
    return { blockNumber: c ? Number(c.number) : null, blockHash: c?.hash ?? null, blockTimestamp: null }
  }
}

function missingToken(tokenId: bigint, tokenType: AlchemyTokenType, error: string): TokenView {
  return {
    tokenId,
    tokenType,
    name: null,
    description: null,
    tokenUri: null,
    image: null,
    imageGateway: null,
    metadata: null,
    error,
    fetchedAt: null,
  }
}

/** `f` over `items`, at most CONCURRENCY at once, results in order. */
function mapLimit<T, R>(items: readonly T[], f: (t: T) => Promise<R>): Promise<R[]> {
  const limiter = new Gate(CONCURRENCY)
  return Promise.all(items.map((t) => limiter.run(() => f(t))))
}
