import type { FetchedRange, RangeReader } from './backfill-range.ts'

/** A range being read (or read), `from`..`to`, in block order with the others. */
interface Reading {
  from: bigint
  to: bigint
  /** Never rejects: a failed read is `{ kind: 'error' }`. */
  result: Promise<FetchedRange>
}

/** What the follower takes to commit: the range's read, and the range. */
export type TakenRange = { from: bigint; to: bigint; got: FetchedRange }

/**
 * Backfill's range workers: up to `workers` consecutive ranges read at once (each with its logs
 * and its blocks, all within the network's request budget), handed to the follower strictly in
 * block order, so the cursor only ever advances over contiguous committed ranges. While the
 * follower commits one range, the next `workers` are being read: the node's time and the
 * database's overlap, and no range waits for the slowest block of the one before it.
 *
 * Ranges are cut one after another (each starts where the previous ends) at the width the
 * RangeReader has at that moment; a refused eth_getLogs narrows the range being read in place,
 * so boundaries never move. Until the node has answered a range at the current width (at the
 * start and after each refusal) only one range is read at a time.
 */
export class RangeQueue {
  private reads: Reading[] = []
  /** Where the next range starts. */
  private next = 0n
  /** The last block to read up to (-1: nothing to read until the next take). */
  private target = -1n
  private tracing = false
  /** A taken range that failed (its read or its commit): read again first when its turn comes. */
  private retry: { from: bigint; to: bigint } | undefined

  constructor(
    private readonly ranges: RangeReader,
    private readonly workers: number,
  ) {
    ranges.onSettled = () => this.fill()
  }

  /** Ranges being read: how many. */
  get inFlight(): number {
    return this.reads.length
  }

  /** Drops every range read or being read (a reorg, a reset, an inconsistent answer). */
  clear(): void {
    this.reads = []
    this.retry = undefined
    this.target = -1n
  }

  /**
   * The range starting at `from` (the block after the cursor), reading up to `target`: waits for
   * its read, and starts the ranges after it. Ranges read for another start, another tracing
   * choice or beyond a target that moved down (a rollback) are dropped first.
   */
  async take(from: bigint, target: bigint, tracing: boolean): Promise<TakenRange> {
    if (tracing !== this.tracing || (this.reads.at(-1)?.to ?? -1n) > target) this.clear()
    const retry = this.retry
    this.retry = undefined
    // A failed range is read again in place; the ranges after it, read meanwhile, are kept.
    if (retry && retry.from === from && retry.to <= target && this.reads[0]?.from === retry.to + 1n)
      this.reads.unshift(this.start(retry.from, retry.to, tracing))
    if (this.reads[0]?.from !== from) this.clear()
    if (this.reads.length === 0) this.next = from
    this.target = target
    this.tracing = tracing
    this.fill()
    const head = this.reads[0] as Reading
    const got = await head.result
    if (this.reads[0] === head) this.reads.shift()
    // Its slot is free: the range after the last one starts now, while this one commits.
    this.fill()
    return { from: head.from, to: head.to, got }
  }

  /**
   * The range just taken failed (its read, its commit): the next take for `from` reads it again,
   * keeping the ranges after it. (A step that fails calls this before it throws.)
   */
  failed(from: bigint, to: bigint): void {
    this.retry = { from, to }
  }

  /** Starts ranges up to the worker count (one while the node has not settled on a width). */
  private fill(): void {
    while (
      this.reads.length < this.workers &&
      this.next <= this.target &&
      (this.reads.length === 0 || this.ranges.settled)
    ) {
      const to = this.ranges.end(this.next, this.target)
      this.reads.push(this.start(this.next, to, this.tracing))
      this.next = to + 1n
    }
  }

  private start(from: bigint, to: bigint, tracing: boolean): Reading {
    const result = this.ranges
      .read(from, to, tracing)
      .catch((err: unknown): FetchedRange => ({ kind: 'error', err }))
    return { from, to, result }
  }
}
