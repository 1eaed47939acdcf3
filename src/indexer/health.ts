import type { Network } from '../chains/registry.ts'
import type { Metrics } from '../metrics.ts'
import { ChainReader } from './chain.ts'
import type { Cursor } from './store.ts'

/** Consecutive failed steps after which a network's indexer counts as stuck (a blip is one or two). */
const STUCK_AFTER_FAILURES = 3
/** Default lag limit: about two minutes of blocks, and never fewer than this many blocks. */
const DEFAULT_LAG_MS = 120_000
const MIN_DEFAULT_LAG_BLOCKS = 10

/** The lag (blocks behind head minus confirmations) past which `/ready` fails for a network. */
export function maxLagBlocks(network: Network): number {
  const set = network.config.indexer?.maxLagBlocks
  if (set !== undefined) return set
  return Math.max(MIN_DEFAULT_LAG_BLOCKS, Math.ceil(DEFAULT_LAG_MS / network.config.blockTimeMs))
}

interface Failing {
  count: number
  block: bigint | undefined
  error: string
}

/**
 * Whether each network's indexer keeps up, for `GET /ready` and `/metrics`. Two signals:
 * consecutive failed steps, known only to the process that runs the follower (it holds the
 * lock), and lag — the indexed cursor (in the database, so every instance sees it) against the
 * chain head minus confirmations — which every instance can check, so a stuck follower on one
 * instance shows on all of them once it falls behind.
 */
export class IndexerHealth {
  private readonly failing = new Map<string, Failing>()

  constructor(private readonly metrics: Metrics | undefined) {}

  /** A step of `network` succeeded (whether or not it indexed anything). */
  stepSucceeded(network: string): void {
    this.failing.delete(network)
    this.metrics?.indexerRetrying.set({ network }, 0)
  }

  /** A step of `network` failed while trying to index from `block`. */
  stepFailed(network: string, block: bigint | undefined, err: unknown): void {
    const prev = this.failing.get(network)
    const count = (prev?.count ?? 0) + 1
    const error = (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 300) ?? ''
    this.failing.set(network, { count, block: block ?? prev?.block, error })
    this.metrics?.indexerRetrying.set({ network }, count)
    if (count >= STUCK_AFTER_FAILURES) this.metrics?.indexerStuck.set({ network }, 1)
  }

  /** This process no longer follows `network` (another instance holds its lock). */
  forget(network: string): void {
    this.failing.delete(network)
    this.metrics?.indexerRetrying.remove({ network })
  }

  /** Records the lag seen by the follower itself (cheaper than asking the chain again). */
  observeLag(network: Network, target: bigint | undefined, indexed: bigint | undefined): void {
    if (target === undefined || indexed === undefined) return
    this.recordLag(network, lagOf(target, indexed))
  }

  /**
   * Null when `network`'s indexer keeps up, else why not, in words for `/ready`. Reads the
   * cursor and the chain head; updates the lag and stuck gauges on the way.
   */
  async problem(network: Network, cursor: Cursor | null): Promise<string | null> {
    const slug = network.slug
    const f = this.failing.get(slug)
    if (f && f.count >= STUCK_AFTER_FAILURES) {
      this.metrics?.indexerStuck.set({ network: slug }, 1)
      const at = f.block === undefined ? '' : ` block ${f.block}`
      return `retrying${at} after ${f.count} consecutive errors (last: ${f.error})`
    }
    // Nothing indexed yet: the follower has not committed its first step, nothing to lag behind.
    if (!cursor) {
      this.metrics?.indexerStuck.set({ network: slug }, 0)
      return null
    }
    const head = await new ChainReader(network).blockNumber()
    const target = head - BigInt(network.config.confirmations)
    const lag = lagOf(target, cursor.number)
    const max = maxLagBlocks(network)
    this.recordLag(network, lag)
    if (lag > max)
      return `behind the chain head by ${lag} blocks (limit ${max}); indexed up to block ${cursor.number}`
    return null
  }

  private recordLag(network: Network, lag: number): void {
    const slug = network.slug
    this.metrics?.indexerLag.set({ network: slug }, lag)
    const stuck = lag > maxLagBlocks(network) || (this.failing.get(slug)?.count ?? 0) >= STUCK_AFTER_FAILURES
    this.metrics?.indexerStuck.set({ network: slug }, stuck ? 1 : 0)
  }
}

function lagOf(target: bigint, indexed: bigint): number {
  return target > indexed ? Number(target - indexed) : 0
}
