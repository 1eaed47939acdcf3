/** bench:ws results: one row per phase, their percentiles, and the printed table and verdicts. */

export interface Phase {
  name: string
  clients: number
  connected: number
  failed: number
  fromHalyard?: { p50: number; p99: number }
  /** Halyard receipt → last socket write of the fan-out loop, per block. */
  fanOut?: { p50: number; p99: number }
  /** CPU time of the fan-out loop per block (independent of other load on the machine). */
  fanOutCpu?: { p50: number; p99: number }
  endToEnd: { p50: number; p99: number }
  delivered: number
  expected: number
  /** Clients that got every mined head exactly once; missing (client, head) pairs; extra receipts. */
  exactlyOnce: number
  missing: number
  duplicates: number
  /** Cluster rows: connected clients per worker, those no worker claimed, and newHeads
   * eth_subscribe calls the upstream saw during the phase (one per worker expected). */
  clientsPerWorker?: number[]
  unmapped?: number
  upstreamNewHeads?: number
  peakRssMiB?: number
  /** Worst client process: event-loop delay p99 (ms) and CPU use (% of one core). */
  clientLoopDelayP99: number
  clientCpuPercent: number
}

const pct = (sorted: Float64Array, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export function percentiles(values: number[]) {
  const a = Float64Array.from(values).sort()
  return { p50: pct(a, 50), p99: pct(a, 99) }
}

const f = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(1))
const pair = (v: { p50: number; p99: number } | undefined) => (v ? `${f(v.p50)} / ${f(v.p99)}` : '—')

const once = (p: Phase) =>
  p.exactlyOnce === p.connected
    ? 'each once'
    : `${p.connected - p.exactlyOnce} clients off: ${p.missing} missing, ${p.duplicates} extra`

/** Prints the table of `phases`, the cluster rows' spread, and the ratios and target for `counts`. */
export function report(phases: Phase[], clusterNote: string | undefined, counts: number[]) {
  console.log('')
  console.log(
    '| path | clients (connected) | delivered | p50 / p99 from server receipt (ms) | p50 / p99 from evm_mine (ms) | fan-out loop p50 / p99 (ms) | fan-out CPU p50 / p99 (ms) | server peak RSS (MiB) | client loop delay p99 (ms) / CPU |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const p of phases) {
    console.log(
      `| ${p.name} | ${p.clients} (${p.connected}${p.failed ? `, ${p.failed} refused` : ''}) | ${p.delivered}/${p.expected} (${once(p)}) | ${pair(p.fromHalyard)} | ${pair(p.endToEnd)} | ${pair(p.fanOut)} | ${pair(p.fanOutCpu)} | ${p.peakRssMiB === undefined ? '—' : p.peakRssMiB.toFixed(0)} | ${f(p.clientLoopDelayP99)} / ${p.clientCpuPercent.toFixed(0)}% |`,
    )
  }
  if (clusterNote) console.log(`| ${clusterNote} |`)
  console.log('')
  for (const p of phases) {
    if (!p.clientsPerWorker) continue
    console.log(
      `${p.name}, ${p.clients} clients: clients per worker ${p.clientsPerWorker.join(' / ')}${p.unmapped ? ` (${p.unmapped} not matched to a worker)` : ''}; newHeads subscriptions seen upstream during the phase: ${p.upstreamNewHeads}`,
    )
  }
  for (const n of counts) {
    const hal = phases.find((p) => p.name === 'Halyard' && p.clients === n)
    const base = phases.find((p) => p.name === 'anvil direct' && p.clients === n)
    if (hal && base && base.connected > 0) {
      console.log(
        `${n} clients: Halyard end-to-end p99 / anvil-direct p99 = ${(hal.endToEnd.p99 / base.endToEnd.p99).toFixed(2)}×`,
      )
    }
  }
  for (const big of phases.filter((p) => p.name !== 'floor' && p.clients === Math.max(...counts))) {
    if (!big.fromHalyard) continue
    const ok = big.fromHalyard.p99 < 100 && (big.peakRssMiB ?? 0) < 1024
    console.log(
      `target, ${big.name} (${big.clients} clients: p99 < 100 ms, RSS < 1 GiB): p99 ${f(big.fromHalyard.p99)} ms, RSS ${big.peakRssMiB?.toFixed(0)} MiB — ${ok ? 'met' : 'NOT met'}`,
    )
  }
}
