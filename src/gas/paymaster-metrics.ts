import { Gauge } from 'prom-client'
import type { Metrics } from '../metrics.ts'
import type { DepositStatus, PaymasterDeposits } from './paymaster-deposit.ts'

/**
 * The paymasters' EntryPoint deposits on /metrics, read at scrape time from the same cached
 * status /ready uses. The deposit gauge is in native units: Prometheus values are floats, so
 * it is for dashboards and alerts, never for accounting (spend is kept exactly in wei).
 */
export function registerPaymasterMetrics(metrics: Metrics, deposits: PaymasterDeposits): void {
  const gauge = (name: string, help: string, value: (d: DepositStatus) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['network', 'version', 'paymaster'] as const,
      aggregator: 'max',
      registers: [metrics.registry],
      async collect() {
        for (const d of await deposits.status())
          this.set({ network: d.network, version: d.version, paymaster: d.paymaster }, value(d))
      },
    })
  gauge(
    'halyard_paymaster_deposit_native',
    "A paymaster's EntryPoint deposit in native units (approximate; -1 when unreadable)",
    (d) => (d.deposit === null ? -1 : Number(BigInt(d.deposit) / 10n ** 12n) / 1e6),
  )
  gauge(
    'halyard_paymaster_deposit_below_floor',
    "1 while a paymaster's EntryPoint deposit is below its configured floor or unreadable",
    (d) => (d.ok ? 0 : 1),
  )
}
