import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

/**
 * The bundler's Prometheus series, registered in the app's registry when one is given (else a
 * registry of their own, for tests and the bench). Gauges that need a database or node read
 * (mempool size, executor balance) are collected at scrape time through the service.
 */
export class BundlerMetrics {
  readonly opsReceived: Counter<'network'>
  readonly opsAccepted: Counter<'network'>
  readonly opsRejected: Counter<'network' | 'code'>
  readonly bundles: Counter<'network' | 'outcome'>
  readonly reorged: Counter<'network'>
  readonly inclusionSeconds: Histogram<'network'>
  readonly mempoolSize: Gauge<'network'>
  readonly executorBalance: Gauge<'network' | 'executor'>

  constructor(
    readonly registry: Registry | undefined,
    collect: {
      mempoolSizes(): Promise<Map<string, number>>
      executorBalances(): Promise<{ network: string; executor: string; wei: bigint }[]>
    },
  ) {
    const registers = registry ? [registry] : []
    this.opsReceived = new Counter({
      name: 'halyard_bundler_ops_received_total',
      help: 'eth_sendUserOperation calls by network',
      labelNames: ['network'] as const,
      registers,
    })
    this.opsAccepted = new Counter({
      name: 'halyard_bundler_ops_accepted_total',
      help: 'UserOperations accepted into the mempool by network',
      labelNames: ['network'] as const,
      registers,
    })
    this.opsRejected = new Counter({
      name: 'halyard_bundler_ops_rejected_total',
      help: 'UserOperations refused by network and ERC-7769 error code',
      labelNames: ['network', 'code'] as const,
      registers,
    })
    this.bundles = new Counter({
      name: 'halyard_bundler_bundles_total',
      help: 'Bundle transactions by network and outcome (sent, mined, failed, dropped, fee_bumped)',
      labelNames: ['network', 'outcome'] as const,
      registers,
    })
    this.reorged = new Counter({
      name: 'halyard_bundler_bundles_reorged_total',
      help: 'Mined bundles a reorg took away (their ops were put back in flight)',
      labelNames: ['network'] as const,
      registers,
    })
    this.inclusionSeconds = new Histogram({
      name: 'halyard_bundler_inclusion_seconds',
      help: 'Time from acceptance to the mined bundle, per UserOperation',
      labelNames: ['network'] as const,
      buckets: [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300],
      registers,
    })
    this.mempoolSize = new Gauge({
      name: 'halyard_bundler_mempool_ops',
      help: 'UserOperations waiting (pending or in a bundle in flight) by network',
      labelNames: ['network'] as const,
      registers,
      async collect() {
        for (const [network, n] of await collect.mempoolSizes()) this.set({ network }, n)
      },
    })
    this.executorBalance = new Gauge({
      name: 'halyard_bundler_executor_balance_wei',
      help: 'Native balance of each bundle executor key',
      labelNames: ['network', 'executor'] as const,
      // A balance, not a count: the cluster aggregate is the lowest any worker saw.
      aggregator: 'min',
      registers,
      async collect() {
        for (const b of await collect.executorBalances())
          this.set({ network: b.network, executor: b.executor }, Number(b.wei))
      },
    })
  }
}
