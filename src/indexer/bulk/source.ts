import type { ChainHeader, ChainLog } from '../chain.ts'
import type { InternalTransfer } from '../traces.ts'

/**
 * History read in bulk from somewhere other than the node (published datasets, files), in the
 * shapes the RPC path builds (chain.ts, traces.ts), so the importer stores it exactly as the
 * follower would have.
 */
export interface BulkBlock {
  /** With `transactions` (each with `created` for a creation when the source can tell). */
  header: ChainHeader
  /**
   * The block's logs; a source may leave out those whose first topic none of decode.ts's events
   * has, since the index stores nothing of them.
   */
  logs: ChainLog[]
  /** Value-moving call frames; undefined when the source has no traces for the block. */
  internal: InternalTransfer[] | undefined
}

export interface BulkSource {
  /** The blocks the source holds, inclusive, without gaps. */
  range(): { from: bigint; to: bigint }
  /** Blocks `from`..`to` (inclusive, within range()), in ascending order. */
  blocks(from: bigint, to: bigint): AsyncIterable<BulkBlock>
}
