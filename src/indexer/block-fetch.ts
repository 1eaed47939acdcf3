import type { Network } from '../chains/registry.ts'
import type { ChainHeader, ChainReader } from './chain.ts'
import type { InternalTransferTracing } from './internal-transfers.ts'
import { traceMatches, txHashesOf } from './native.ts'
import type { InternalTransfer, TraceOutcome } from './traces.ts'

/** Runs one request within a network's request budget (or directly when it has none). */
export type Budgeted = <T>(task: () => Promise<T>) => Promise<T>

/** Blocks read at once during backfill. */
const BLOCK_CONCURRENCY = 16

/** A block read for backfill: header with transactions, and its trace when traced. */
export interface FetchedBlock {
  header: ChainHeader
  internal: readonly InternalTransfer[] | undefined
}

/**
 * Full blocks with their receipts' statuses (ChainReader.markReverted), each traced when it has
 * transactions and `traced` (the node traces), BLOCK_CONCURRENCY at a time. 'replaced' (try
 * again next step) when a trace or the receipts are of another block than the header read beside them.
 */
export async function fetchFullBlocks(
  chain: ChainReader,
  /** One trace try (the follower's, within the network's request budget). */
  attempt: (n: bigint) => Promise<TraceOutcome>,
  /** Runs one request within the network's request budget (the trace's retries). */
  run: Budgeted,
  tracing: InternalTransferTracing,
  net: Network,
  numbers: readonly bigint[],
  traced: boolean,
): Promise<Map<bigint, FetchedBlock> | 'replaced'> {
  const out = new Map<bigint, FetchedBlock>()
  let replaced = false
  let next = 0
  const worker = async () => {
    while (next < numbers.length && !replaced) {
      const n = numbers[next++] as bigint
      // Block, receipts (which transactions reverted) and trace side by side, each checked
      // against the block's hash: a block replaced between the answers retries the step.
      const [header, first, receipts] = await Promise.all([
        chain.header(n, true),
        traced ? attempt(n) : undefined,
        chain.blockReceipts(n),
      ])
      if (!header) continue
      if (!(await chain.markReverted(header, { receipts }))) {
        replaced = true
        continue
      }
      const internal = await internalTransfersOf(tracing, net, header, first, run)
      if (internal === 'replaced') replaced = true
      else out.set(header.number, { header, internal })
    }
  }
  await Promise.all(Array.from({ length: Math.min(BLOCK_CONCURRENCY, numbers.length) }, worker))
  return replaced ? 'replaced' : out
}

/**
 * The block's internal transfers from `first` (a trace read beside the block, by number;
 * undefined when not tracing) or from retries: [] for a block without transactions,
 * undefined when tracing failed, 'replaced' when the trace is of another block.
 */
export async function internalTransfersOf(
  tracing: InternalTransferTracing,
  net: Network,
  block: ChainHeader,
  first: TraceOutcome | undefined,
  /** Runs each retry within the network's request budget. */
  run: Budgeted,
): Promise<readonly InternalTransfer[] | undefined | 'replaced'> {
  if (!first) return undefined
  const hashes = txHashesOf(block)
  if (hashes.length === 0) return []
  // A failed attempt counts as the first try; an answer that cannot vouch for this block (by
  // number, of a replaced block, or without hashes) is asked for again.
  const usable = first.ok && !traceMatches(block, first.trace, false) ? undefined : first
  const trace = await tracing.trace(net, block.number, hashes, usable, run)
  if (trace && !traceMatches(block, trace, true)) return 'replaced'
  return trace?.internal
}
