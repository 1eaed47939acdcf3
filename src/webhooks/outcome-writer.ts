import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { AttemptOutcome } from './store.ts'
import * as store from './store.ts'

export interface OutcomeWriterDeps {
  db: DB
  /** Recorded with each attempt: which instance made it. */
  instance: string | null
  logger: Logger
  /** Runs after an outcome is durable, before its `done`. */
  afterRecorded: (outcome: AttemptOutcome) => Promise<void>
  /** The worker is stopping: a write that keeps failing is given up (the leases expire, events are resent). */
  stopping: () => boolean
}

/**
 * Records delivery outcomes in batches, one transaction per flush: what makes thousands of
 * deliveries per second possible. An outcome's `done` runs only once it is durable (and its
 * follow-up, such as pausing the webhook, has run); a failed write is retried, never dropped.
 */
export class OutcomeWriter {
  private pending: Array<{ outcome: AttemptOutcome; done: () => void }> = []
  private flushing: Promise<void> | undefined

  constructor(private readonly deps: OutcomeWriterDeps) {}

  record(outcome: AttemptOutcome, done: () => void): void {
    this.pending.push({ outcome, done })
    if (!this.flushing) this.flushing = this.flushLoop()
  }

  /** Resolves once nothing is left to write (or, shutting down with the database gone, given up). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing
  }

  private async flushLoop(): Promise<void> {
    let failures = 0
    // After PostgreSQL refused a batch's data, that batch's outcomes go one per transaction (so
    // the one it refuses is found and the others are written), then batching resumes: under
    // steady load the queue never empties, and one transaction per outcome would not keep up.
    let isolate = 0
    while (this.pending.length > 0) {
      const single = isolate > 0
      const batch = single ? this.pending.splice(0, 1) : this.pending
      if (single) isolate--
      else this.pending = []
      try {
        const t0 = performance.now()
        await store.recordOutcomes(
          this.deps.db,
          batch.map((b) => b.outcome),
          this.deps.instance,
        )
        this.deps.logger.debug(
          { ms: Math.round(performance.now() - t0), outcomes: batch.length },
          'webhook outcomes recorded',
        )
        failures = 0
      } catch (err) {
        if (refusedData(err)) {
          if (batch.length > 1) {
            isolate = batch.length
            this.pending = [...batch, ...this.pending]
            continue
          }
          // This outcome alone cannot be written: retrying it forever would hold up every
          // outcome behind it (their events would stay `sending` and be sent again at each
          // lease expiry). Dropped with an error; its event is re-sent once its lease expires.
          const o = batch[0]?.outcome
          this.deps.logger.error(
            { err: (err as Error).message, webhook: o?.ev.webhook_id, event: o?.ev.id },
            'webhook attempt could not be recorded; its event will be sent again',
          )
          batch[0]?.done()
          continue
        }
        failures++
        this.deps.logger.warn(
          { err: (err as Error).message, failures },
          'recording webhook attempts failed; retrying',
        )
        if (single) isolate++
        this.pending = [...batch, ...this.pending]
        // Past the lease another worker may resend; that is the at-least-once contract anyway.
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures)))
        if (this.deps.stopping() && failures > 5) {
          // Shutting down with the database gone: the leases expire and the events are resent.
          for (const b of this.pending) b.done()
          this.pending = []
          break
        }
        continue
      }
      for (const b of batch) {
        await this.deps.afterRecorded(b.outcome)
        b.done()
      }
    }
    this.flushing = undefined
  }
}

/** PostgreSQL refused the values themselves (data exception, integrity violation), not the connection. */
function refusedData(err: unknown): boolean {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^(22|23)/.test(code)
}
