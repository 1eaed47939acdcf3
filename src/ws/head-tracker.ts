import type { Logger } from '../logger.ts'
import type { Hash } from '../types.ts'
import type { Head } from './routes.ts'

export interface HeadFetcher {
  /** The block with this hash as a head, or undefined when the upstream does not know it. */
  byHash(hash: Hash): Promise<Head | undefined>
}

/**
 * What the tracker emits, in order: `removed` are blocks of the old branch that a reorg undid
 * (highest first), `added` the new canonical blocks in ascending order.
 */
export type HeadSink = (added: readonly Head[], removed: readonly Head[]) => Promise<void>

export interface HeadTrackerOptions {
  /** Blocks remembered to recognise the common ancestor of a reorg (and duplicates). */
  readonly keep: number
  /** Longest gap filled by walking parents; a longer outage skips ahead (and logs it). */
  readonly maxBackfill: number
  readonly logger: Logger
  readonly label: string
  /** A head could not be linked (an upstream hiccup): the owner should offer a fresh head soon. */
  readonly onStall?: () => void
}

/**
 * Turns heads from any source (upstream pushes from any node, polling, catch-up after a
 * reconnect) into one gap-free canonical sequence: each head is linked to the blocks already
 * emitted through its parent hashes, so missed blocks are fetched and emitted first, in order,
 * duplicates are dropped, and a reorg is emitted as the undone blocks plus the new branch
 * (a new head at a lower or equal height). Heads are processed one at a time.
 */
export class HeadTracker {
  /** Recently emitted canonical blocks by hash, in ascending order (Map keeps insertion order). */
  private readonly recent = new Map<Hash, Head>()
  private readonly queue: Head[] = []
  private running: Promise<void> | undefined
  private generation = 0

  constructor(
    private readonly fetcher: HeadFetcher,
    private readonly sink: HeadSink,
    private readonly opts: HeadTrackerOptions,
  ) {}

  offer(head: Head): void {
    if (this.recent.has(head.hash)) return
    this.queue.push(head)
    this.running ??= this.drain()
  }

  /** Sets the starting point: blocks after this one are news; it is not emitted itself. */
  seed(head: Head): void {
    if (this.recent.size === 0) this.recent.set(head.hash, head)
  }

  /** Forgets everything (the stream stopped); a later start begins at whatever head comes. */
  reset(): void {
    this.generation++
    this.queue.length = 0
    this.recent.clear()
  }

  /** Resolves once every offered head has been processed. */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }

  private async drain(): Promise<void> {
    try {
      for (let head = this.queue.shift(); head; head = this.queue.shift()) {
        const gen = this.generation
        try {
          await this.process(head, gen)
        } catch (err) {
          // The next head (or poll) retries the same linking; nothing was emitted for this one.
          this.opts.logger.warn(
            { network: this.opts.label, err: (err as Error).message },
            'could not link a new head to the chain; will retry with the next head',
          )
          this.opts.onStall?.()
        }
      }
    } finally {
      this.running = undefined
    }
  }

  private async process(head: Head, gen: number): Promise<void> {
    if (this.recent.has(head.hash)) return
    if (this.recent.size === 0) {
      await this.emit([head], [], gen)
      return
    }
    // Older than anything remembered: a lagging upstream's stale head, not news.
    const oldest = this.recent.values().next().value
    if (oldest && head.number < oldest.number) return
    // Walk back from the new head until a block we already emitted: that is the common ancestor.
    const branch: Head[] = [head]
    let ancestor: Head | undefined
    for (let cur = head; ; ) {
      ancestor = this.recent.get(cur.parentHash)
      if (ancestor || cur.number === 0n) break
      if (branch.length >= this.opts.maxBackfill) {
        this.opts.logger.warn(
          { network: this.opts.label, head: head.number.toString(), limit: this.opts.maxBackfill },
          'new head is further from the last emitted block than the backfill limit; skipping ahead',
        )
        break
      }
      const parent = await this.fetcher.byHash(cur.parentHash)
      if (gen !== this.generation) return
      if (!parent) throw new Error(`upstream does not know block ${cur.parentHash} (parent of ${cur.number})`)
      branch.push(parent)
      cur = parent
    }
    const removed: Head[] = []
    if (ancestor) {
      for (const h of this.recent.values()) if (h.number > ancestor.number) removed.push(h)
      removed.reverse()
    } else {
      // No common ancestor within reach: everything remembered is stale.
      this.recent.clear()
    }
    branch.reverse()
    await this.emit(branch, removed, gen)
  }

  private async emit(added: Head[], removed: Head[], gen: number): Promise<void> {
    if (gen !== this.generation) return
    for (const h of removed) this.recent.delete(h.hash)
    for (const h of added) this.recent.set(h.hash, h)
    while (this.recent.size > this.opts.keep) {
      const oldest = this.recent.keys().next().value
      if (oldest === undefined) break
      this.recent.delete(oldest)
    }
    await this.sink(added, removed)
  }
}
