import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

/** Every Prometheus series Halyard exports, in one registry per app instance. */
export class Metrics {
  readonly registry = new Registry()

  readonly httpRequests = new Counter({
    name: 'halyard_http_requests_total',
    help: 'HTTP requests by route, status, network and JSON-RPC method',
    labelNames: ['route', 'status', 'network', 'method'] as const,
    registers: [this.registry],
  })

  readonly httpDuration = new Histogram({
    name: 'halyard_http_request_duration_seconds',
    help: 'HTTP request latency by route and network',
    labelNames: ['route', 'network'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })

  readonly computeUnits = new Counter({
    name: 'halyard_compute_units_total',
    help: 'Compute units charged, by route',
    labelNames: ['route'] as const,
    registers: [this.registry],
  })

  readonly rateLimited = new Counter({
    name: 'halyard_rate_limited_total',
    help: 'Requests refused by a rate limit, by limit',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  })

  readonly rpcCalls = new Counter({
    name: 'halyard_rpc_calls_total',
    help: 'JSON-RPC calls by network, method and outcome',
    labelNames: ['network', 'method', 'outcome'] as const,
    registers: [this.registry],
  })

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'halyard_' })
  }
}
