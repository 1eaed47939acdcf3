import type { Counter } from 'prom-client'

type Key = string | number
type Node = Map<Key, Node | TallySlot>

/** One series' count since the last collection. */
export interface TallySlot {
  n: number
}

interface Series<L extends string> extends TallySlot {
  readonly labels: Partial<Record<L, string>>
}

/**
 * A counter's hot series counted as plain numbers and added to the prom-client counter when it
 * is collected (a scrape, or the cluster's aggregation; see the counters' `collect` in
 * metrics.ts). prom-client hashes the label object on every `inc`, which bench:rpc's profile
 * showed at a few percent of a cached call. Series are found by keys the caller already holds
 * (route, network, method strings whose hashes V8 keeps), so no key is built per call.
 */
export class CounterTally<L extends string> {
  private readonly root: Node = new Map()
  private readonly series: Series<L>[] = []

  /** The series under these keys, if seen before. */
  get(a: Key, b?: Key, c?: Key, d?: Key): TallySlot | undefined {
    let node = this.root.get(a)
    if (b !== undefined) node = node instanceof Map ? node.get(b) : undefined
    if (c !== undefined) node = node instanceof Map ? node.get(c) : undefined
    if (d !== undefined) node = node instanceof Map ? node.get(d) : undefined
    return node instanceof Map ? undefined : node
  }

  /** Makes the series under `keys` with its labels (first sight only: series are bounded). */
  create(keys: readonly [Key, ...Key[]], labels: Partial<Record<L, string>>): TallySlot {
    let node = this.root
    for (const k of keys.slice(0, -1)) {
      let next = node.get(k)
      if (!(next instanceof Map)) {
        next = new Map()
        node.set(k, next)
      }
      node = next
    }
    const slot: Series<L> = { labels, n: 0 }
    node.set(keys[keys.length - 1]!, slot)
    this.series.push(slot)
    return slot
  }

  /** Adds what was counted since the last call to `counter`. */
  flushInto(counter: Counter<L>): void {
    for (const s of this.series) {
      if (s.n === 0) continue
      counter.inc(s.labels, s.n)
      s.n = 0
    }
  }
}
