import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { innerMap } from './common/maps.ts'
import { type HistogramSlot, HistogramTally } from './metrics-histogram-tally.ts'
import { CounterTally } from './metrics-tally.ts'

/** Every Prometheus series Halyard exports, in one registry per app instance. */
export class Metrics {
  readonly registry = new Registry()

  readonly httpRequests: Counter<'route' | 'status' | 'network' | 'method'> = new Counter({
    name: 'halyard_http_requests_total',
    help: 'HTTP requests by route, status, network and JSON-RPC method',
    labelNames: ['route', 'status', 'network', 'method'] as const,
    collect: (): void => this.httpTally.flushInto(this.httpRequests),
    registers: [this.registry],
  })

  readonly httpDuration = new Histogram({
    name: 'halyard_http_request_duration_seconds',
    help: 'HTTP request latency by route and network',
    labelNames: ['route', 'network'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    collect: (): void => this.httpDurationTally.flush(),
    registers: [this.registry],
  })

  readonly fastLaneRequests: Counter<string> = new Counter({
    name: 'halyard_http_fast_lane_requests_total',
    help: 'HTTP requests answered by a fast lane (below the framework pipeline; src/http/fast-lane.ts)',
    collect: (): void => this.fastLaneTally.flushInto(this.fastLaneRequests),
    registers: [this.registry],
  })

  readonly computeUnits: Counter<'route'> = new Counter({
    name: 'halyard_compute_units_total',
    help: 'Compute units charged, by route',
    labelNames: ['route'] as const,
    collect: (): void => this.computeUnitTally.flushInto(this.computeUnits),
    registers: [this.registry],
  })

  readonly rateLimited = new Counter({
    name: 'halyard_rate_limited_total',
    help: 'Requests refused by a rate limit, by limit',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  })

  // Rate limits while Redis is out (src/limits/redis-outage.ts): the outage is logged once, counted here.
  readonly limiterRedisUp = new Gauge({
    name: 'halyard_limiter_redis_up',
    help: '1 while rate limits are decided in Redis, 0 while they fall back (local allowance or 503)',
    aggregator: 'min',
    registers: [this.registry],
  })

  readonly limiterFallback = new Counter({
    name: 'halyard_limiter_fallback_total',
    help: 'Rate-limit decisions taken without Redis, by outcome (allowed, refused, unavailable = 503)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  })

  readonly rpcCalls: Counter<'network' | 'method' | 'outcome'> = new Counter({
    name: 'halyard_rpc_calls_total',
    help: 'JSON-RPC calls by network, method and outcome',
    labelNames: ['network', 'method', 'outcome'] as const,
    collect: (): void => this.rpcCallTally.flushInto(this.rpcCalls),
    registers: [this.registry],
  })

  // JSON-RPC gateway (src/chains, src/rpc). `method` is a known method name or "other".
  readonly upstreamRequests: Counter<'network' | 'upstream' | 'method'> = new Counter({
    name: 'halyard_upstream_requests_total',
    help: 'Calls sent to upstream nodes (health checks excluded), by network, upstream and method',
    labelNames: ['network', 'upstream', 'method'] as const,
    collect: (): void => this.upstreamRequestTally.flushInto(this.upstreamRequests),
    registers: [this.registry],
  })

  readonly upstreamDuration = new Histogram({
    name: 'halyard_upstream_request_duration_seconds',
    help: 'Upstream call latency by network, upstream and method',
    labelNames: ['network', 'upstream', 'method'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    collect: (): void => this.upstreamDurationTally.flush(),
    registers: [this.registry],
  })

  readonly upstreamErrors = new Counter({
    name: 'halyard_upstream_errors_total',
    help: 'Failed upstream calls by network, upstream and kind (connect, timeout, http, invalid, rate_limited)',
    labelNames: ['network', 'upstream', 'kind'] as const,
    registers: [this.registry],
  })

  readonly failovers = new Counter({
    name: 'halyard_rpc_failovers_total',
    help: 'Calls retried on another upstream after a failure, by network',
    labelNames: ['network'] as const,
    registers: [this.registry],
  })

  readonly hedges = new Counter({
    name: 'halyard_rpc_hedges_total',
    help: 'Hedged reads by network and outcome (sent, won)',
    labelNames: ['network', 'outcome'] as const,
    registers: [this.registry],
  })

  readonly cacheLookups: Counter<'network' | 'result'> = new Counter({
    name: 'halyard_rpc_cache_lookups_total',
    help: 'JSON-RPC cache lookups of cacheable calls by network and result (hit, miss)',
    labelNames: ['network', 'result'] as const,
    collect: (): void => this.cacheLookupTally.flushInto(this.cacheLookups),
    registers: [this.registry],
  })

  readonly upstreamHealthy = new Gauge({
    name: 'halyard_upstream_healthy',
    help: '1 when an upstream is eligible for traffic (right chain, caught up, breaker closed)',
    labelNames: ['network', 'upstream'] as const,
    // Each cluster worker judges upstreams itself; the cluster's /metrics says 1 only if all do.
    aggregator: 'min',
    registers: [this.registry],
  })

  readonly upstreamHeadLag = new Gauge({
    name: 'halyard_upstream_head_lag_blocks',
    help: 'Blocks (slots) an upstream is behind the best upstream of its network',
    labelNames: ['network', 'upstream'] as const,
    // A lag, not a count: summing it over cluster workers would multiply it; the worst one shows.
    aggregator: 'max',
    registers: [this.registry],
  })

  // Chain indexer (src/indexer). Only the instance holding a network's lock follows it; the others
  // report no retries and the lag they read from the database, so the worst value is the truth.
  readonly indexerLogsSkipped = new Counter({
    name: 'halyard_indexer_logs_skipped_total',
    help: 'Logs under a known event topic that fit no standard layout and were skipped, by network and event',
    labelNames: ['network', 'event'] as const,
    registers: [this.registry],
  })

  readonly indexerLag = new Gauge({
    name: 'halyard_indexer_lag_blocks',
    help: 'Blocks the indexed cursor is behind the chain head minus confirmations, by network',
    labelNames: ['network'] as const,
    aggregator: 'max',
    registers: [this.registry],
  })

  readonly indexerRetrying = new Gauge({
    name: 'halyard_indexer_consecutive_failures',
    help: 'Consecutive failed indexer steps (retries of the same block); 0 while it progresses',
    labelNames: ['network'] as const,
    aggregator: 'max',
    registers: [this.registry],
  })

  readonly indexerStuck = new Gauge({
    name: 'halyard_indexer_stuck',
    help: '1 while a network indexer lags more than indexer.maxLagBlocks or keeps failing on a block',
    labelNames: ['network'] as const,
    aggregator: 'max',
    registers: [this.registry],
  })

  readonly indexerIndexedBlock = new Gauge({
    name: 'halyard_indexer_indexed_block',
    help: 'The last block the index holds (its cursor), by network',
    labelNames: ['network'] as const,
    aggregator: 'max',
    registers: [this.registry],
  })

  readonly indexerCompleteFrom = new Gauge({
    name: 'halyard_indexer_complete_from_block',
    help: 'The block the index is complete from (indexer.history), by network; 0 from genesis',
    labelNames: ['network'] as const,
    aggregator: 'min',
    registers: [this.registry],
  })

  readonly historyScans = new Gauge({
    name: 'halyard_history_scans',
    help: 'Address history scans in this process, by network and state (queued, running)',
    labelNames: ['network', 'state'] as const,
    aggregator: 'sum',
    registers: [this.registry],
  })

  // WebSocket subscriptions (src/ws).
  readonly wsConnections = new Gauge({
    name: 'halyard_ws_connections',
    help: 'Open client WebSocket connections by network',
    labelNames: ['network'] as const,
    registers: [this.registry],
  })

  readonly wsPushes = new Counter({
    name: 'halyard_ws_pushes_total',
    help: 'Subscription pushes sent to clients, by network and kind',
    labelNames: ['network', 'kind'] as const,
    registers: [this.registry],
  })

  readonly wsSlowClients = new Counter({
    name: 'halyard_ws_slow_clients_total',
    help: 'Clients closed because their send buffer passed the cap, by network',
    labelNames: ['network'] as const,
    registers: [this.registry],
  })

  readonly wsUpstreamConnects = new Counter({
    name: 'halyard_ws_upstream_connects_total',
    help: 'Upstream WebSocket connections opened (first connects and reconnects), by network',
    labelNames: ['network'] as const,
    registers: [this.registry],
  })

  // The hot series are tallied in plain numbers and added at collection (metrics-tally.ts).
  private readonly httpTally = new CounterTally<'route' | 'status' | 'network' | 'method'>()
  private readonly fastLaneTally = new CounterTally<string>()
  private readonly computeUnitTally = new CounterTally<'route'>()
  private readonly rpcCallTally = new CounterTally<'network' | 'method' | 'outcome'>()
  private readonly cacheLookupTally = new CounterTally<'network' | 'result'>()
  private readonly upstreamRequestTally = new CounterTally<'network' | 'upstream' | 'method'>()
  // Latencies too (metrics-histogram-tally.ts), each series' slot found once per route and network.
  private readonly httpDurationTally = new HistogramTally(this.httpDuration)
  private readonly upstreamDurationTally = new HistogramTally(this.upstreamDuration)
  private readonly durationSlots = new Map<string, Map<string, HistogramSlot>>()

  /** One answered HTTP request: its count and its latency. */
  recordHttp(route: string, status: number, network: string, method: string, seconds: number): void {
    const t = this.httpTally
    const s =
      t.get(route, network, method, status) ??
      t.create([route, network, method, status], { route, status: String(status), network, method })
    s.n++
    const byNetwork = innerMap(this.durationSlots, route)
    let slot = byNetwork.get(network)
    if (!slot) {
      slot = this.httpDurationTally.slot({ route, network })
      byNetwork.set(network, slot)
    }
    slot.observe(seconds)
  }

  /** An upstream call series (network, upstream, method): its count and latency, tallied. */
  upstreamSeries(labels: { network: string; upstream: string; method: string }): {
    inc(): void
    observe(seconds: number): void
  } {
    const { network, upstream, method } = labels
    const t = this.upstreamRequestTally
    const count = t.get(network, upstream, method) ?? t.create([network, upstream, method], labels)
    const latency = this.upstreamDurationTally.slot(labels)
    return {
      inc: () => {
        count.n++
      },
      observe: (seconds) => latency.observe(seconds),
    }
  }

  /** A request the fast lane took (http/fast-lane.ts). */
  recordFastLane(): void {
    const t = this.fastLaneTally
    ;(t.get('') ?? t.create([''], {})).n++
  }

  recordRpcCall(network: string, method: string, outcome: 'ok' | 'error'): void {
    const t = this.rpcCallTally
    ;(t.get(network, method, outcome) ?? t.create([network, method, outcome], { network, method, outcome }))
      .n++
  }

  recordCacheLookup(network: string, result: 'hit' | 'miss'): void {
    const t = this.cacheLookupTally
    ;(t.get(network, result) ?? t.create([network, result], { network, result })).n++
  }

  recordComputeUnits(route: string, units: number): void {
    const t = this.computeUnitTally
    ;(t.get(route) ?? t.create([route], { route })).n += units
  }

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'halyard_' })
  }
}
