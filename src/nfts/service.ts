import { getCode, hasCode } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { HalyardError, notFound } from '../errors.ts'
import type { Address, Page } from '../types.ts'
import { type CallReader, type ContractInfo, readContractInfo, readToken, readUris } from './contract.ts'
import { ERROR_RETRY_MS, MetadataLoader, type MetadataLoaderDeps } from './metadata-loader.ts'
import type { Trait } from './parse.ts'
import * as store from './store.ts'
import { expandId } from './uri.ts'

/** Wire shapes (plus a few fields that explain a null). */
export interface NftMetadata {
  contract: Address
  token_id: string
  chain: string
  name: string | null
  description: string | null
  image_url: string | null
  image_gateway_url: string | null
  standard: store.NftStandard
  owner: Address | null
  traits: Trait[]
  /** The URI the metadata came from (ERC-1155 `{id}` expanded), as the contract returns it. */
  token_uri: string | null
  /** The metadata document as fetched; null when it could not be loaded. */
  metadata: Record<string, unknown> | null
  /** Why `metadata` is null (broken URI, refused target, timeout, too large…), else null. */
  metadata_error: string | null
}

export interface NftCollection {
  contract: Address
  chain: string
  name: string | null
  symbol: string | null
  standard: store.NftStandard
  /** A JSON number; a decimal string only beyond 2^53 (exact, never rounded). */
  total_supply: number | string
  num_owners: number
  floor_price_eth: string | null
  floor_price_usd: string | null
  banner_url: string | null
  image_url: string | null
  description: string | null
}

export interface OwnedNft {
  contract: Address
  token_id: string
  name: string | null
  collection_name: string | null
  image_url: string | null
  standard: store.NftStandard
  /** Quantity held: 1 for ERC-721. */
  balance: string
}

export interface OwnedNftList {
  address: Address
  chain: string
  nfts: OwnedNft[]
  page: number
  total: number
}

/** What prefetch needs of a holding: which token, and what is already known of it. */
export type HoldingRow = Pick<
  store.OwnedRow,
  'contract' | 'tokenId' | 'standard' | 'fetched' | 'contractKnown'
>

export interface NftServiceDeps extends MetadataLoaderDeps {
  /** View calls at the head, batched through Multicall3 (the Token API's reader). */
  reader: (net: Network) => CallReader
}

const ZERO = '0x0000000000000000000000000000000000000000'

/**
 * NFT metadata, collections and holdings. Holdings and owner counts come from Halyard's own
 * index (src/indexer nft_balances); the on-chain views (ownerOf, tokenURI, uri, ERC-165) are
 * read at the head; metadata documents are fetched through the SSRF-safe fetch and cached in
 * the database, keyed by the URI they came from.
 */
export class NftService {
  private readonly loader: MetadataLoader

  constructor(private readonly deps: NftServiceDeps) {
    this.loader = new MetadataLoader(deps)
  }

  async metadata(net: Network, contract: Address, tokenId: bigint, refresh: boolean): Promise<NftMetadata> {
    return (await this.metadataFetched(net, contract, tokenId, refresh)).meta
  }

  /** As `metadata`, with when the copy served was fetched (the Alchemy API shows it). */
  async metadataFetched(
    net: Network,
    contract: Address,
    tokenId: bigint,
    refresh: boolean,
  ): Promise<{ meta: NftMetadata; fetchedAt: Date }> {
    const kind = await this.standardOf(net, contract, tokenId)
    const reads = await readToken(this.deps.reader(net), contract, tokenId, kind)
    let owner: Address | null = null
    let uri: string | null
    if (kind === 'ERC721') {
      owner = reads.owner === ZERO ? null : reads.owner
      if (owner === null) throw this.noToken(net, contract, tokenId)
      uri = reads.uri
    } else {
      // ERC-1155 has no standard existence check: the contract's own (exists / totalSupply(id)),
      // else the index — when it knows the contract at all; a contract it never saw can't be judged.
      const exists =
        reads.exists1155 ??
        ((await store.tokenHeld(this.deps.db, net.slug, contract, tokenId)) ||
          (await store.indexedStandard(this.deps.db, net.slug, contract)) === null)
      if (!exists) throw this.noToken(net, contract, tokenId)
      uri = reads.uri1155 === null ? null : expandId(reads.uri1155, tokenId)
    }
    let cached = await store.readMetadata(this.deps.db, net.slug, contract, tokenId)
    if (refresh && cached) {
      const interval = this.deps.config(net).nftMetadata.refreshIntervalSeconds
      const claim = await store.claimRefresh(this.deps.db, net.slug, contract, tokenId, interval)
      if (!claim.ok) {
        throw new HalyardError(
          'rate_limited',
          `refresh of ${contract} token ${tokenId} is limited to once per ${interval} s; retry in ${claim.retryAfter} s`,
          { 'Retry-After': String(claim.retryAfter) },
        )
      }
    }
    const stale =
      !cached ||
      refresh ||
      cached.tokenUri !== uri ||
      (cached.error !== null && Date.now() - cached.fetchedAt.getTime() > ERROR_RETRY_MS)
    if (stale) cached = await this.loader.token(net, contract, tokenId, kind, uri, { refresh })
    const m = cached as store.StoredMetadata
    const meta: NftMetadata = {
      contract,
      token_id: tokenId.toString(),
      chain: net.slug,
      name: m.name,
      description: m.description,
      image_url: m.image,
      image_gateway_url: this.imageGatewayUrl(net, m.image),
      standard: kind,
      owner,
      traits: m.traits,
      token_uri: uri,
      metadata: m.metadata,
      metadata_error: m.error,
    }
    return { meta, fetchedAt: m.fetchedAt }
  }

  async collection(net: Network, contract: Address): Promise<NftCollection> {
    const info = await readContractInfo(this.deps.reader(net), contract)
    const kind = await this.standardOf(net, contract, null, info)
    const counts = await store.indexedCounts(this.deps.db, net.slug, contract)
    const doc = await this.loader.collection(net, contract, info.contractUri)
    const text = (...keys: string[]) => {
      for (const k of keys) {
        const v = doc?.[k]
        if (typeof v === 'string' && v.trim() !== '') return v
      }
      return null
    }
    // totalSupply() where the contract has it (ERC721Enumerable), else minted minus burned
    // from the index: token ids with a current holder.
    const supply = info.totalSupply ?? BigInt(counts.tokens)
    return {
      contract,
      chain: net.slug,
      name: info.name ?? text('name'),
      symbol: info.symbol ?? text('symbol'),
      standard: kind,
      total_supply: supply <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(supply) : supply.toString(),
      num_owners: counts.owners,
      // No marketplace source is configured in Halyard: unknown, never invented.
      floor_price_eth: null,
      floor_price_usd: null,
      banner_url: text('banner_image', 'banner_image_url', 'banner'),
      image_url: text('image', 'image_url', 'featured_image'),
      description: text('description'),
    }
  }

  async owned(net: Network, holder: Address, page: Page): Promise<OwnedNftList> {
    let { rows, total } = await store.ownedPage(this.deps.db, net.slug, holder, page)
    if (await this.prefetch(net, rows))
      ({ rows, total } = await store.ownedPage(this.deps.db, net.slug, holder, page))
    return {
      address: holder,
      chain: net.slug,
      page: page.page,
      total,
      nfts: rows.map((r) => ({
        contract: r.contract,
        token_id: r.tokenId.toString(),
        name: r.name,
        collection_name: r.collectionName,
        image_url: r.image,
        standard: r.standard,
        balance: r.balance.toString(),
      })),
    }
  }

  /**
   * Fetches what is not known yet of these holdings (metadata, the contract's standard) in the
   * background, bounded, and waits up to `ownedWaitMs` for it: a list answers with what is known
   * then, an item is never left out. Returns whether anything was missing (read the rows again).
   */
  async prefetch(net: Network, rows: readonly HoldingRow[]): Promise<boolean> {
    const missing = rows.filter((r) => !r.fetched || !r.contractKnown)
    if (missing.length === 0) return false
    const work = this.loader.track(this.fillOwned(net, missing))
    const waitMs = this.deps.config(net).nftMetadata.ownedWaitMs
    let timer: NodeJS.Timeout | undefined
    await Promise.race([work, new Promise((r) => (timer = setTimeout(r, waitMs)))])
    clearTimeout(timer)
    return true
  }

  /** Stops background metadata fetches (server shutdown). */
  stop(): Promise<void> {
    return this.loader.stop()
  }

  private async fillOwned(net: Network, rows: readonly HoldingRow[]): Promise<void> {
    const contracts = [...new Set(rows.filter((r) => !r.contractKnown).map((r) => r.contract))]
    const limiter = this.loader.limiter(net)
    await Promise.allSettled(contracts.map((c) => limiter.run(() => this.standardOf(net, c, null))))
    const tokens = rows.filter((r) => !r.fetched)
    const uris = await readUris(this.deps.reader(net), tokens)
    await Promise.allSettled(
      tokens.map((t, i) => {
        const raw = uris[i] ?? null
        const uri = raw === null || t.standard === 'ERC721' ? raw : expandId(raw, t.tokenId)
        return this.loader.token(net, t.contract, t.tokenId, t.standard, uri, { background: true })
      }),
    )
  }

  /**
   * ERC-165 first; then the standard the index saw the contract's transfers under; then, for a
   * token, probing ownerOf/tokenURI (ERC-721) and uri (ERC-1155). Detected once per contract.
   */
  private async standardOf(
    net: Network,
    contract: Address,
    tokenId: bigint | null,
    known?: ContractInfo,
  ): Promise<store.NftStandard> {
    const saved = await store.readContract(this.deps.db, net.slug, contract)
    if (saved) return saved.standard
    if (!hasCode(await getCode(net, contract))) throw notFound(`${contract} is not a contract on ${net.slug}`)
    const info = known ?? (await readContractInfo(this.deps.reader(net), contract))
    let kind: store.NftStandard | null = info.erc721 ? 'ERC721' : info.erc1155 ? 'ERC1155' : null
    kind ??= await store.indexedStandard(this.deps.db, net.slug, contract)
    if (kind === null && tokenId !== null) {
      const probe = await readToken(this.deps.reader(net), contract, tokenId, 'probe')
      if ((probe.owner !== null && probe.owner !== ZERO) || probe.uri !== null) kind = 'ERC721'
      else if (probe.uri1155 !== null) kind = 'ERC1155'
    }
    if (kind === null) throw notFound(`${contract} on ${net.slug} is not an ERC-721 or ERC-1155 contract`)
    await store.saveContract(this.deps.db, net.slug, contract, {
      standard: kind,
      name: info.name,
      symbol: info.symbol,
    })
    return kind
  }

  /** The image's URL through the configured IPFS/Arweave gateways; null for data: URIs. */
  imageGatewayUrl(net: Network, image: string | null): string | null {
    return this.loader.imageGatewayUrl(net, image)
  }

  private noToken(net: Network, contract: Address, tokenId: bigint): HalyardError {
    return notFound(`token ${tokenId} of ${contract} does not exist on ${net.slug}`)
  }
}
