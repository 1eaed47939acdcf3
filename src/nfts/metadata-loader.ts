import type { Kysely } from 'kysely'
import type { Network } from '../chains/registry.ts'
import { Gate } from '../common/gate.ts'
import type { Logger } from '../logger.ts'
import type { DataApiConfig } from '../prices/config.ts'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'
import { type FetchPolicy, loadDocument } from './fetcher.ts'
import { parseMetadata } from './parse.ts'
import * as store from './store.ts'
import { type Gateways, toGatewayUrl } from './uri.ts'

/** A failed fetch is tried again on a later request after this long. */
export const ERROR_RETRY_MS = 5 * 60_000
/** A collection's contractURI document is re-read after this long. */
const COLLECTION_TTL_MS = 24 * 3600_000

export interface MetadataLoaderDeps {
  db: Kysely<Database>
  /** Per-network data settings: gateways and metadata fetch limits. */
  config: (net: Network) => DataApiConfig
  /** Dev mode and tests: metadata servers on loopback are reachable. Never in production. */
  allowLoopback: boolean
  logger: Logger
}

/**
 * Token metadata and collection (contractURI) documents: fetched through the SSRF-safe fetch,
 * cached in the database keyed by the URI they came from, bounded per network when fetched in
 * the background, and cut short on shutdown.
 */
export class MetadataLoader {
  private readonly limiters = new Map<string, Gate>()
  private readonly inflight = new Map<string, Promise<store.StoredMetadata>>()
  private readonly background = new Set<Promise<unknown>>()
  private readonly abort = new AbortController()

  constructor(private readonly deps: MetadataLoaderDeps) {}

  /**
   * Fetches and stores a token's metadata, once at a time per token. Background fetches (owned
   * lists) are bounded per network; a caller waiting on one token is not queued behind them
   * (request rate limits bound those).
   */
  token(
    net: Network,
    contract: Address,
    tokenId: bigint,
    kind: store.NftStandard,
    uri: string | null,
    mode: { refresh?: boolean; background?: boolean } = {},
  ): Promise<store.StoredMetadata> {
    const key = `${net.slug}:${contract}:${tokenId}`
    const running = this.inflight.get(key)
    if (running) return running
    const refresh = mode.refresh === true
    const work = async () => {
      const outcome =
        uri === null
          ? { ok: false as const, error: 'the contract returned no token URI' }
          : await loadDocument(uri, this.policy(net), this.abort.signal)
      if (!outcome.ok && outcome.detail)
        this.deps.logger.debug(
          { contract, tokenId: tokenId.toString(), detail: outcome.detail },
          'NFT metadata fetch failed',
        )
      const parsed = outcome.ok ? parseMetadata(outcome.doc, kind === 'ERC1155' ? tokenId : null) : null
      const m: store.StoredMetadata = {
        tokenUri: uri,
        metadata: outcome.ok ? outcome.doc : null,
        name: parsed?.name ?? null,
        description: parsed?.description ?? null,
        image: parsed?.image ?? null,
        traits: parsed?.traits ?? [],
        error: outcome.ok ? null : outcome.error,
        fetchedAt: new Date(),
      }
      // A fetch cut short by shutdown is not a property of the token: don't cache it.
      if (!this.abort.signal.aborted)
        await store.saveMetadata(this.deps.db, net.slug, contract, tokenId, m, refresh)
      return m
    }
    const task = (mode.background ? this.limiter(net).run(work) : work()).finally(() =>
      this.inflight.delete(key),
    )
    this.inflight.set(key, task)
    return task
  }

  async collection(
    net: Network,
    contract: Address,
    uri: string | null,
  ): Promise<Record<string, unknown> | null> {
    if (uri === null) return null
    const saved = await store.readContract(this.deps.db, net.slug, contract)
    const age = saved?.collectionFetchedAt
      ? Date.now() - saved.collectionFetchedAt.getTime()
      : Number.POSITIVE_INFINITY
    const fresh =
      saved?.contractUri === uri &&
      age < (saved.collectionError === null ? COLLECTION_TTL_MS : ERROR_RETRY_MS)
    if (fresh) return saved?.collection ?? null
    const outcome = await loadDocument(uri, this.policy(net), this.abort.signal)
    const doc = outcome.ok ? outcome.doc : null
    // As for token metadata: a fetch cut short by shutdown says nothing about the document.
    if (!this.abort.signal.aborted)
      await store.saveCollectionDoc(this.deps.db, net.slug, contract, {
        uri,
        collection: doc,
        error: outcome.ok ? null : outcome.error,
      })
    return doc
  }

  /** The image's URL through the configured IPFS/Arweave gateways; null for data: URIs. */
  imageGatewayUrl(net: Network, image: string | null): string | null {
    if (image === null || /^data:/i.test(image)) return null
    return toGatewayUrl(image, this.gateways(net))
  }

  /** Bounds background work on one network (metadata fetches, contract detection). */
  limiter(net: Network): Gate {
    let l = this.limiters.get(net.slug)
    if (!l) {
      l = new Gate(this.deps.config(net).nftMetadata.concurrency)
      this.limiters.set(net.slug, l)
    }
    return l
  }

  /** Background work: awaited on stop, its failure logged (a later request tries again). */
  track(p: Promise<unknown>): Promise<void> {
    const quiet = p.then(
      () => {},
      (err) => this.deps.logger.debug({ err: (err as Error).message }, 'NFT background fetch failed'),
    )
    this.background.add(quiet)
    void quiet.finally(() => this.background.delete(quiet))
    return quiet
  }

  /** Stops background metadata fetches (server shutdown). */
  async stop(): Promise<void> {
    this.abort.abort()
    await Promise.allSettled([...this.background])
  }

  private gateways(net: Network): Gateways {
    const c = this.deps.config(net)
    return { ipfs: c.ipfsGateway, arweave: c.arweaveGateway }
  }

  private policy(net: Network): FetchPolicy {
    const m = this.deps.config(net).nftMetadata
    return {
      timeoutMs: m.timeoutMs,
      maxBytes: m.maxBytes,
      maxRedirects: m.maxRedirects,
      allowLoopback: this.deps.allowLoopback,
      gateways: this.gateways(net),
    }
  }
}
