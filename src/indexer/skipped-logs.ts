import type { Counter } from 'prom-client'
import type { Logger } from '../logger.ts'
import type { IndexedLog } from './types.ts'

/** Where a skipped log sits on the chain and why it was skipped. */
export interface SkippedLog {
  network: string
  blockNumber: bigint
  log: IndexedLog
  /** The event the log claimed to be (its topic), e.g. `TransferBatch`. */
  event: string
  reason: string
}

/** Consumers that decode logs themselves report malformed ones through this (src/indexer/types.ts). */
export type ReportSkippedLog = (skipped: SkippedLog) => void

/** One warning per network per this interval at most; the ones in between are only counted. */
const WARN_INTERVAL_MS = 60_000

/**
 * Counts logs the indexer or a consumer could not decode (`halyard_indexer_logs_skipped_total`
 * by network and event) and warns about them without flooding the log: anyone can emit
 * thousands of malformed logs for a few cents, so after one warning a network stays quiet for
 * a minute, and the next warning says how many were skipped meanwhile.
 */
export class SkippedLogs {
  private readonly lastWarn = new Map<string, { at: number; suppressed: number }>()

  constructor(
    private readonly logger: Logger,
    private readonly counter?: Counter<'network' | 'event'>,
    private readonly warnIntervalMs = WARN_INTERVAL_MS,
  ) {}

  readonly report: ReportSkippedLog = (s) => {
    this.counter?.inc({ network: s.network, event: s.event })
    const now = Date.now()
    const last = this.lastWarn.get(s.network)
    if (last && now - last.at < this.warnIntervalMs) {
      last.suppressed++
      return
    }
    this.lastWarn.set(s.network, { at: now, suppressed: 0 })
    this.logger.warn(
      {
        network: s.network,
        block: s.blockNumber.toString(),
        tx: s.log.txHash,
        logIndex: s.log.logIndex,
        contract: s.log.address,
        event: s.event,
        reason: s.reason,
        ...(last && last.suppressed > 0 ? { alsoSkippedSinceLastWarning: last.suppressed } : {}),
      },
      'malformed log skipped',
    )
  }
}
