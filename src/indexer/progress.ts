import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'

/** A catch-up further behind than this many blocks is logged as progress. */
const CATCHING_UP_BLOCKS = 16n
/** How often a catching-up network logs its progress line. */
const DEFAULT_EVERY_MS = 10_000

interface Sample {
  at: number
  cursor: bigint
}

/**
 * Catch-up progress of each network: the indexed-block gauge, and while far behind a log line
 * every few seconds with the cursor, the head it chases, the rate and the time left.
 */
export class IndexerProgress {
  private readonly last = new Map<string, Sample>()

  constructor(
    private readonly logger: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly everyMs = DEFAULT_EVERY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The network's recorded start (the complete-from gauge). */
  completeFrom(network: string, block: bigint): void {
    this.metrics?.indexerCompleteFrom.set({ network }, Number(block))
  }

  /** After a step: `cursor` indexed, `target` the head minus confirmations it chases. */
  observe(network: string, cursor: bigint | undefined, target: bigint | undefined): void {
    if (cursor === undefined) return
    this.metrics?.indexerIndexedBlock.set({ network }, Number(cursor))
    const now = this.now()
    const prev = this.last.get(network)
    if (!prev) {
      this.last.set(network, { at: now, cursor })
      return
    }
    if (now - prev.at < this.everyMs) return
    this.last.set(network, { at: now, cursor })
    if (target === undefined || target - cursor <= CATCHING_UP_BLOCKS) return
    const blocks = cursor > prev.cursor ? Number(cursor - prev.cursor) : 0
    const perSecond = blocks / ((now - prev.at) / 1000)
    const left = Number(target - cursor)
    this.logger.info(
      {
        network,
        cursor: cursor.toString(),
        head: target.toString(),
        behind: left,
        blocksPerSecond: Math.round(perSecond * 10) / 10,
        etaSeconds: perSecond > 0 ? Math.round(left / perSecond) : null,
      },
      'indexer catching up',
    )
  }
}
