import type { NetworkConfig } from '../config/file.ts'
import { notFound } from '../errors.ts'
import { defaultAlchemyNames } from './alchemy-names.ts'
import { ManagedPool, type PoolDeps } from './managed-pool.ts'
import { networkSlug } from './slug.ts'
import type { UpstreamPool } from './upstream-pool.ts'

export interface Network {
  readonly chain: string
  readonly network: string
  /** REST APIs name a network by slug: `ethereum` for mainnet, `ethereum-sepolia` otherwise. */
  readonly slug: string
  readonly kind: 'evm' | 'solana'
  readonly chainId: number | undefined
  readonly isMainnet: boolean
  readonly isDevnet: boolean
  readonly config: NetworkConfig
  readonly pool: UpstreamPool
}

export type PoolFactory = (config: NetworkConfig) => UpstreamPool

/** The production pool (health checks, failover, breaker), reporting to `deps` metrics and log. */
export const managedPoolFactory =
  (deps: PoolDeps = {}): PoolFactory =>
  (cfg) =>
    new ManagedPool(cfg, deps)

const defaultPoolFactory: PoolFactory = managedPoolFactory()

export { networkSlug }

export class NetworkRegistry {
  private readonly byPath = new Map<string, Network>()
  private readonly bySlugMap = new Map<string, Network>()
  /** Every name the Alchemy-compatible root accepts: slugs, `chain-network`, Alchemy's names. */
  private readonly byAlias = new Map<string, Network>()

  constructor(configs: readonly NetworkConfig[], poolFactory: PoolFactory = defaultPoolFactory) {
    for (const cfg of configs) {
      const net: Network = {
        chain: cfg.chain,
        network: cfg.network,
        slug: networkSlug(cfg.chain, cfg.network),
        kind: cfg.kind,
        chainId: cfg.chainId,
        isMainnet: cfg.network === 'mainnet',
        isDevnet: cfg.network === 'devnet' || cfg.chainId === 31337,
        config: cfg,
        pool: poolFactory(cfg),
      }
      this.byPath.set(`${cfg.chain}/${cfg.network}`, net)
      this.bySlugMap.set(net.slug, net)
    }
    // Slugs first, so a configured alias never hides another network's own slug.
    for (const net of this.byPath.values()) this.byAlias.set(net.slug, net)
    for (const net of this.byPath.values()) {
      const names = [
        `${net.chain}-${net.network}`,
        ...defaultAlchemyNames(net.chain, net.network),
        ...(net.config.alchemyNames ?? []),
      ]
      for (const name of names) if (!this.byAlias.has(name)) this.byAlias.set(name, net)
    }
  }

  find(chain: string, network: string): Network | undefined {
    return this.byPath.get(`${chain}/${network}`)
  }

  /** `find` for a path already written `{chain}/{network}` (the fast lane's URL tail). */
  findPath(path: string): Network | undefined {
    return this.byPath.get(path)
  }

  /** The network at /{chain}/{network}, or 404 naming it. */
  get(chain: string, network: string): Network {
    const net = this.find(chain, network)
    if (!net) throw notFound(`network ${chain}/${network} is not configured`)
    return net
  }

  /** The network a REST API names by slug (`ethereum`, `ethereum-devnet`), or 404. */
  getBySlug(slug: string): Network {
    return knownOr404(this.bySlugMap, slug, 'chain')
  }

  /**
   * The network the Alchemy-compatible root names: a slug (`ethereum-devnet`), `chain-network`
   * (`ethereum-mainnet`) or an Alchemy name (`eth-mainnet`), or 404 naming what is configured.
   */
  getByAlias(name: string): Network {
    return knownOr404(this.byAlias, name, 'network')
  }

  all(): Network[] {
    return [...this.byPath.values()]
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((n) => n.pool.close()))
  }
}

/** The network `map` holds under `key`, or a 404 that lists every name it does hold. */
function knownOr404(map: ReadonlyMap<string, Network>, key: string, what: 'chain' | 'network'): Network {
  const net = map.get(key)
  if (!net) throw notFound(`${what} ${key} is not configured (configured: ${[...map.keys()].join(', ')})`)
  return net
}
