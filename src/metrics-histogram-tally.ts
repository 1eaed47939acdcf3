import type { Histogram } from 'prom-client'

/** What prom-client 15 keeps per histogram series (its Histogram class), read at collection only. */
interface PromSeries {
  labels: Record<string, string | number>
  bucketValues: Record<number, number>
  sum: number
  count: number
}
interface PromHistogram {
  hashMap: Record<string, PromSeries>
  upperBounds: number[]
}

/** One histogram series' observations since the last collection. */
export class HistogramSlot {
  /**
   * Per upper bound, not cumulative, as prom-client counts; the last place holds values above
   * every bound, which prom-client counts only in `count` (its +Inf bucket is the count).
   */
  readonly counts: number[]
  sum = 0
  n = 0
  /** The prom-client series these observations are added to (found at the first collection). */
  target: PromSeries | undefined

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Record<string, string>,
  ) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe(value: number): void {
    const b = this.bounds
    let i = 0
    while (i < b.length && value > b[i]!) i++
    this.counts[i]!++
    this.sum += value
    this.n++
  }
}

/**
 * A histogram's hot series counted as plain numbers and added to the prom-client histogram when
 * it is collected, as CounterTally does for counters (metrics-tally.ts): prom-client's `observe`
 * builds and hashes a label object on every call, which bench:rpc's profile showed on every
 * request. The sums go straight into prom-client's own series (its fields as of v15, read here
 * and by the test beside this file), so what a scrape shows is what `observe` would have shown.
 */
export class HistogramTally<L extends string> {
  private readonly slots: HistogramSlot[] = []
  private readonly byLabels = new Map<string, HistogramSlot>()
  private readonly bounds: readonly number[]

  constructor(private readonly histogram: Histogram<L>) {
    this.bounds = (histogram as unknown as PromHistogram).upperBounds
  }

  /** The series to observe into for `labels`; callers keep it, so this runs once per label set. */
  slot(labels: Record<L, string>): HistogramSlot {
    const key = JSON.stringify(labels)
    let s = this.byLabels.get(key)
    if (!s) {
      s = new HistogramSlot(this.bounds, labels)
      this.byLabels.set(key, s)
      this.slots.push(s)
    }
    return s
  }

  /** Adds what was observed since the last call; the histogram's `collect` calls it. */
  flush(): void {
    const h = this.histogram as unknown as PromHistogram
    let live: Set<PromSeries> | undefined
    for (const s of this.slots) {
      if (s.n === 0) continue
      live ??= new Set(Object.values(h.hashMap))
      if (s.target === undefined || !live.has(s.target)) s.target = this.seriesOf(s.labels)
      const t = s.target
      for (let i = 0; i < this.bounds.length; i++) {
        const bound = this.bounds[i]!
        t.bucketValues[bound] = (t.bucketValues[bound] ?? 0) + s.counts[i]!
        s.counts[i] = 0
      }
      s.counts[this.bounds.length] = 0
      t.sum += s.sum
      t.count += s.n
      s.sum = 0
      s.n = 0
    }
  }

  /** prom-client's series for `labels`, made (zeroed) when it has none yet. */
  private seriesOf(labels: Record<string, string>): PromSeries {
    const h = this.histogram as unknown as PromHistogram
    const same = (p: PromSeries) =>
      Object.keys(labels).every((k) => String(p.labels[k]) === labels[k]) &&
      Object.keys(p.labels).length === Object.keys(labels).length
    let found = Object.values(h.hashMap).find(same)
    if (!found) {
      this.histogram.zero(labels as Partial<Record<L, string>>)
      found = Object.values(h.hashMap).find(same)
    }
    if (!found) throw new Error(`prom-client kept no series for ${JSON.stringify(labels)}`)
    return found
  }
}
