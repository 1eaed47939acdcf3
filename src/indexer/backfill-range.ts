import { failureMessage, nodeError } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import { type FetchedBlock, fetchFullBlocks } from './block-fetch.ts'
import type { ChainLog, ChainReader } from './chain.ts'
import type { InternalTransferTracing } from './internal-transfers.ts'
import { narrowedRange } from './range-hint.ts'
import type { TraceOutcome } from './traces.ts'

/**
 * Backfill reads every block with its transactions (external transfers) and traces those with
 * any: at most this many blocks per step, fewer while steps carry many transactions (memory),
 * read this many at a time.
 */
const MAX_FULL_STEP = 1000n
const MAX_TXS_PER_STEP = 10_000

/** A backfill range as read from the node, before it is checked and committed. */
export type FetchedRange =
  | {
      kind: 'ok'
      to: bigint
      logs: ChainLog[]
      fetched: Map<bigint, FetchedBlock>
      ms: { logsMs: number; blocksMs: number }
    }
  | { kind: 'narrowed' }
  | { kind: 'replaced' }
  | { kind: 'error'; err: unknown }

export interface RangeReaderOptions {
  network: Network
  logger: Logger
  tracing: InternalTransferTracing
  /** Largest eth_getLogs range (blocks). */
  maxRange: number
  /** A range answer with more logs than this shrinks the next range. */
  maxLogsPerRange: number
  /** One trace try for a block (within the network's request budget). */
  attempt: (n: bigint) => Promise<TraceOutcome>
}

/**
 * The follower's backfill ranges: how wide the next one is (eth_getLogs range adapting to logs
 * per answer and to the node's refusals, block count to transactions per step), and reading one.
 */
export class RangeReader {
  private range: bigint
  /** The widest range the node accepts, once a refusal named it (the range never grows past it). */
  private rangeCap: bigint
  /** Blocks per backfill step, shrunk while steps carry many transactions. */
  private fullRange = 100n

  constructor(
    private readonly chain: ChainReader,
    private readonly opts: RangeReaderOptions,
  ) {
    this.range = BigInt(Math.min(opts.maxRange, 1000))
    this.rangeCap = BigInt(opts.maxRange)
  }

  /** A step committed `txs` transactions: fewer blocks per step while steps carry many. */
  carried(txs: number): void {
    if (txs > MAX_TXS_PER_STEP && this.fullRange > 1n) this.fullRange /= 2n
    else if (txs < MAX_TXS_PER_STEP / 4 && this.fullRange < MAX_FULL_STEP) this.fullRange *= 2n
  }

  /**
   * One backfill range from `from`: its logs (narrowing the range on a refusal, range-hint.ts)
   * and every block with receipts and traces (block-fetch.ts). 'narrowed' when the node refused
   * the range (the next step asks for the narrower one), 'replaced' when a block changed
   * between the answers.
   */
  async read(from: bigint, target: bigint, tracing: boolean): Promise<FetchedRange> {
    // The log range adapts to logs per answer, the block count to transactions per step.
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
    const step = this.fullRange > this.range ? this.range : this.fullRange
    const to = from + step - 1n < target ? from + step - 1n : target
    let logs: ChainLog[]
    const started = performance.now()
    try {
      logs = await this.chain.logsByRange(from, to)
    } catch (err) {
      // Nodes refuse ranges that are too wide or too full with a JSON-RPC error, most naming
      // the range or width that works (range-hint.ts): the next request asks for that. Some
      // name nothing, time out or cut the connection instead: halve. Only one block failing is fatal.
      const node = nodeError(err)
      const said =
        node?.data === undefined ? failureMessage(err) : `${node.message} ${JSON.stringify(node.data)}`
      const next = narrowedRange(said, from, to)
      if (!next) throw err
      this.range = next.to - next.from + 1n
      if (next.named) this.rangeCap = this.range
      this.opts.logger.debug(
        {
          network: this.opts.network.slug,
          range: Number(this.range),
          named: next.named,
          err: said,
          rpcError: node !== undefined,
        },
        'eth_getLogs range shrunk',
      )
      return { kind: 'narrowed' }
    }
    if (logs.length > this.opts.maxLogsPerRange && this.range > 1n) this.range /= 2n
    else if (logs.length < this.opts.maxLogsPerRange / 4 && this.range < this.rangeCap)
      this.range = this.range * 2n > this.rangeCap ? this.rangeCap : this.range * 2n
    const logsAt = performance.now()
    const fetched = await fetchFullBlocks(
      this.chain,
      this.opts.attempt,
      this.opts.tracing,
      this.opts.network,
      rangeOf(from, to),
      tracing,
    )
    if (fetched === 'replaced') return { kind: 'replaced' }
    return {
      kind: 'ok',
      to,
      logs,
      fetched,
      ms: { logsMs: logsAt - started, blocksMs: performance.now() - logsAt },
    }
  }
}

/** from, from + 1, …, to. */
export function rangeOf(from: bigint, to: bigint): bigint[] {
  const out: bigint[] = []
  for (let n = from; n <= to; n++) out.push(n)
  return out
}
