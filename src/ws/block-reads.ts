import { failureMessage, readUnchecked } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Hash } from '../types.ts'
import type { Head } from './routes.ts'

/** One kind of per-block read: the upstream call and how its answer becomes items. */
export interface BlockRead<T> {
  readonly method: string
  params(block: Head): unknown[]
  /** The answer's items; throws (and the read is retried) when the answer has the wrong shape. */
  items(result: unknown): T[]
  /** Logged when every try failed: who misses the block's items. */
  readonly missed: string
}

/**
 * A read of each new block (its logs, its transactions) made once whatever the number of
 * subscribers, retried briefly, and kept for the last `keepBlocks` blocks so a reorg can push
 * the items again as removed.
 */
export class BlockReads<T> {
  private readonly byBlock = new Map<Hash, T[]>()

  constructor(
    private readonly network: Network,
    private readonly opts: { readonly requestTimeoutMs: number; readonly keepBlocks: number },
    private readonly logger: Logger,
    private readonly read: BlockRead<T>,
  ) {}

  /** The items kept for a block a reorg undid, forgotten as they are handed out. */
  take(hash: Hash): T[] | undefined {
    const items = this.byBlock.get(hash)
    this.byBlock.delete(hash)
    return items
  }

  clear(): void {
    this.byBlock.clear()
  }

  async fetch(block: Head): Promise<T[]> {
    let lastError = ''
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const result = await readUnchecked(this.network, this.read.method, this.read.params(block), {
          timeoutMs: this.opts.requestTimeoutMs,
        })
        const items = this.read.items(result)
        this.byBlock.set(block.hash, items)
        while (this.byBlock.size > this.opts.keepBlocks) {
          const oldest = this.byBlock.keys().next().value
          if (oldest === undefined) break
          this.byBlock.delete(oldest)
        }
        return items
      } catch (err) {
        lastError = failureMessage(err)
        await new Promise((r) => setTimeout(r, 100 * (attempt + 1)))
      }
    }
    this.logger.error(
      { network: this.network.slug, block: block.number.toString(), err: lastError },
      `could not read a block with ${this.read.method}; ${this.read.missed} miss it`,
    )
    return []
  }
}
