import { innerMap } from '../common/maps.ts'
import type { Metrics } from '../metrics.ts'

/** Methods per upstream whose series are kept (method labels are a bounded set anyway). */
const MAX_METHODS_PER_UPSTREAM = 512

/** One (upstream, method) pair's request counter and duration histogram. */
export interface Series {
  inc(): void
  observe(seconds: number): void
}

/**
 * A network's upstream series, each resolved once: the per-call path does no method-label
 * lookup and builds no label object, and counts in plain numbers published at scrape time
 * (metrics.ts `upstreamSeries`).
 */
export class UpstreamSeries {
  private readonly byUpstream = new Map<string, Map<string, Series>>()

  constructor(
    private readonly metrics: Metrics,
    private readonly network: string,
    /** A method's metric label (the JSON-RPC method registry's, via the pool). */
    private readonly labelOf: (method: string) => string,
  ) {}

  of(upstream: string, method: string): Series {
    const byMethod = innerMap(this.byUpstream, upstream)
    let series = byMethod.get(method)
    if (!series) {
      series = this.metrics.upstreamSeries({ network: this.network, upstream, method: this.labelOf(method) })
      if (byMethod.size < MAX_METHODS_PER_UPSTREAM) byMethod.set(method, series)
    }
    return series
  }
}
