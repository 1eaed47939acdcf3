import { HalyardError } from '../errors.ts'
import { isUnavailable } from '../storage/pg-pool.ts'
import { type Caller, callerOf } from './caller.ts'
import type { AuthStore } from './store.ts'

/** Cold lookups per store query, and queries in flight at once (see `lookup`). */
const LOOKUP_BATCH = 256
const LOOKUP_CONCURRENCY = 2

interface QueuedLookup {
  /** The store's key: the SHA-256 of the presented key. */
  hash: string
  resolve: (caller: Caller | null) => void
  reject: (err: unknown) => void
}

/** What a caller hears when its key cannot be checked: retry in a second (RFC 9110 §10.2.3). */
export const unverifiable = (): HalyardError =>
  new HalyardError(
    'service_unavailable',
    'temporarily unable to verify the API key: the database is unavailable; retry shortly',
    { 'retry-after': '1' },
  )

/**
 * The store reads behind the key cache (auth/service.ts): batched, bounded in number, and
 * watching whether the store answers at all.
 */
export class KeyLookups {
  private readonly queued: QueuedLookup[] = []
  private running = 0
  /** Keys looked up, and the store queries that took (tests, diagnostics). */
  lookups = 0
  queries = 0
  /** Set while the store's lookups fail (since when); cleared by the first that succeeds. */
  downSince: number | undefined

  constructor(
    private readonly store: AuthStore,
    private readonly operatorEmails: ReadonlySet<string>,
    private readonly now: () => number,
  ) {}

  /**
   * Queues a store read for `hash`. With nothing in flight it goes out at once, alone; while
   * LOOKUP_CONCURRENCY reads are out, arrivals wait and leave together as one query, so a flood
   * of unknown keys costs the database a query per batch rather than one per request.
   */
  lookup(hash: string): Promise<Caller | null> {
    this.lookups++
    return new Promise((resolve, reject) => {
      this.queued.push({ hash, resolve, reject })
      this.drain()
    })
  }

  private drain(): void {
    while (this.running < LOOKUP_CONCURRENCY && this.queued.length > 0) {
      const batch = this.queued.splice(0, LOOKUP_BATCH)
      this.running++
      this.lookupBatch(batch).finally(() => {
        this.running--
        this.drain()
      })
    }
  }

  private async lookupBatch(batch: readonly QueuedLookup[]): Promise<void> {
    this.queries++
    try {
      const rows = await this.store.keysWithAccountByHashes(batch.map((q) => q.hash))
      this.downSince = undefined
      const byHash = new Map(rows.map((r) => [r.key_hash, r]))
      for (const q of batch) q.resolve(callerOf(byHash.get(q.hash), this.operatorEmails))
    } catch (err) {
      // Every waiter hears, whatever failed (a rejected query or a row that would not map):
      // the ones already resolved ignore this, the rest must not wait forever. No database to
      // ask is a 503 with Retry-After; anything else is ours (500).
      const down = isUnavailable(err)
      if (down) this.downSince ??= this.now()
      for (const q of batch) {
        q.reject(
          down
            ? unverifiable()
            : new HalyardError('internal_error', 'temporarily unable to verify the API key; retry shortly'),
        )
      }
    }
  }
}
