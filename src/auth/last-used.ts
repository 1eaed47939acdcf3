import type { AuthStore } from './store.ts'

/** How often the keys used since the last flush get their last_used_at written (one UPDATE). */
export const LAST_USED_FLUSH_MS = 5_000

/**
 * Ids of keys that authenticated since the last flush. Recording a use is one Set.add on the
 * request path; the database hears of it in one UPDATE per flush, never per request.
 */
export class LastUsedMarks {
  private used = new Set<string>()
  private flushing: Promise<void> | undefined
  private flushTimer: NodeJS.Timeout | undefined

  constructor(private readonly store: AuthStore) {}

  mark(keyId: string): void {
    this.used.add(keyId)
  }

  /**
   * Writes last_used_at for every key used since the previous flush (one at a time; a call
   * during one waits for it, then runs). A failed write keeps its ids for the next flush.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing
    const ids = [...this.used]
    if (ids.length === 0) return
    this.used = new Set()
    this.flushing = this.store
      .touchKeys(ids)
      .catch((err: unknown) => {
        for (const id of ids) this.used.add(id)
        throw err
      })
      .finally(() => {
        this.flushing = undefined
      })
    await this.flushing
  }

  /** Flushes last-used marks every `intervalMs` until stop(). */
  start(intervalMs = LAST_USED_FLUSH_MS, onError: (err: unknown) => void = () => {}): void {
    if (this.flushTimer) return
    this.flushTimer = setInterval(() => {
      this.flush().catch(onError)
    }, intervalMs)
    this.flushTimer.unref()
  }

  /** Stops the timer and writes what is left (the server's close, before storage closes). */
  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer)
    this.flushTimer = undefined
    await this.flush()
  }
}
