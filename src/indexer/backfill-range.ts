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
  /** Runs one request within the network's request budget (trace retries). */
  run: <T>(task: () => Promise<T>) => Promise<T>
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
  /**
   * Whether the node answered an eth_getLogs at the current width since its last refusal (and
   * since the start): until it has, one range at a time, so a width the node refuses is learnt
   * from one refusal rather than from one per range in flight.
   */
  settled = false
  /** Called when the node first answers after a refusal (more ranges may start). */
  onSettled: (() => void) | undefined

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

  /** The last block of the next range from `from`: as wide as logs and transactions allow. */
  end(from: bigint, target: bigint): bigint {
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
    const step = this.fullRange > this.range ? this.range : this.fullRange
    return from + step - 1n < target ? from + step - 1n : target
  }

  /**
   * The range `from`..`to`: its logs, in windows of the current eth_getLogs width (narrowed on a
   * refusal, range-hint.ts), and every block with receipts and traces (block-fetch.ts);
   * 'replaced' when a block changed between the answers.
   */
  async read(from: bigint, to: bigint, tracing: boolean): Promise<FetchedRange> {
    const started = performance.now()
    const logs: ChainLog[] = []
    for (let a = from; a <= to; ) {
      const b = a + this.range - 1n < to ? a + this.range - 1n : to
      const got = await this.logs(a, b)
      if (got === 'narrowed') continue
      for (const l of got) logs.push(l)
      a = b + 1n
    }
    const logsAt = performance.now()
    const fetched = await fetchFullBlocks(
      this.chain,
      this.opts.attempt,
      this.opts.run,
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

  /** One eth_getLogs window; 'narrowed' when the node refused it (the width is now narrower). */
  private async logs(from: bigint, to: bigint): Promise<ChainLog[] | 'narrowed'> {
    let logs: ChainLog[]
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
      const width = next.to - next.from + 1n
      // Another range in flight may have narrowed it further meanwhile: keep the narrower.
      if (width < this.range) this.range = width
      if (next.named && width < this.rangeCap) this.rangeCap = width
      this.settled = false
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
      return 'narrowed'
    }
    if (logs.length > this.opts.maxLogsPerRange && this.range > 1n) this.range /= 2n
    else if (logs.length < this.opts.maxLogsPerRange / 4 && this.range < this.rangeCap)
      this.range = this.range * 2n > this.rangeCap ? this.rangeCap : this.range * 2n
    if (!this.settled) {
      this.settled = true
      this.onSettled?.()
    }
    return logs
  }
}

/** from, from + 1, …, to. */
export function rangeOf(from: bigint, to: bigint): bigint[] {
  const out: bigint[] = []
  for (let n = from; n <= to; n++) out.push(n)
  return out
}
