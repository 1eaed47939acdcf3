/** bench:rpc's rows, configurations and the ratio report (bench/rpc.ts runs them). */

export interface Row {
  name: string
  reqPerSec: number
  p50: number
  p99: number
  errors: number
  /** CPU the server under test (its process tree) spent per answered request, µs. */
  cpuUsPerReq: number | undefined
  /** The measured part of the row on the monotonic clock, µs (for slicing a profile). */
  window: { from: number; to: number }
}

export const fmt = (n: number, d = 0) => n.toFixed(d)
export const cpu = (r: Row) => (r.cpuUsPerReq === undefined ? '–' : fmt(r.cpuUsPerReq, 1))

export interface Direct {
  blockNumber: Row
  chainId: Row
  batch: Row
}

/** One configuration's rows: nginx, the floors and Halyard, all with `workers` processes. */
export interface Config {
  title: string
  nginx: Row | undefined
  /** nginx → anvil with a new eth_getBalance per request. */
  nginxDistinct: Row | undefined
  floor: Row
  /** The reading constant server (it parses the call, answers under its id): the cached rows' floor for a gateway that reads. */
  readingConstant: Row
  /**
   * The headers constant server: the reading one answering with the rate-limit and request-id
   * headers the API promises on every answer: the least a cached answer can cost in Node.
   */
  headersConstant: Row
  proxyFloor: Row
  /** The bare Node proxy with a new eth_getBalance per request: the floor of the distinct row. */
  proxyDistinct: Row
  /** The reading Node proxy (it parses the call, puts the client's id back) with a new eth_getBalance per request. */
  readingDistinct: Row
  /**
   * The coalescing Node proxy on the uncached row: the reading proxy joining identical calls in
   * flight, answering with the API's headers: what Node allows for that row.
   */
  coalescing: Row
  /** Halyard with a new eth_getBalance per request: neither cache nor coalescing answers it. */
  distinct: Row
  /** Halyard with HALYARD_FAST_LANE=0 (one process only). */
  laneOff: { uncached: Row; cached: Row } | undefined
  uncached: Row
  cached: Row
  batch: Row
  limitedUncached: Row
  limitedCached: Row
  /** Per Halyard row: the profile top, with BENCH_PROFILE=1. */
  profiles: { row: Row; report: string }[]
}

export function printRatios(c: Config, direct: Direct) {
  const ratio = (a: Row, b: Row) => a.reqPerSec / b.reqPerSec
  const target = (r: number, floor: number) => `${fmt(r, 2)}×  [≥ ${floor}] ${r >= floor ? 'met' : 'NOT MET'}`
  console.log(`\nratios, ${c.title}:`)
  console.log(`  distinct Halyard / bare node proxy:     ${target(ratio(c.distinct, c.proxyDistinct), 0.9)}`)
  console.log(
    `  distinct Halyard / reading node proxy:  ${fmt(ratio(c.distinct, c.readingDistinct), 2)}×  (reading / bare node proxy: ${fmt(ratio(c.readingDistinct, c.proxyDistinct), 2)}×)`,
  )
  if (c.nginxDistinct)
    console.log(
      `  distinct Halyard / nginx:               ${fmt(ratio(c.distinct, c.nginxDistinct), 2)}×  (bare node proxy / nginx: ${fmt(ratio(c.proxyDistinct, c.nginxDistinct), 2)}×)`,
    )
  console.log(
    c.nginx
      ? `  uncached Halyard / nginx:               ${target(ratio(c.uncached, c.nginx), 1)}`
      : '  uncached Halyard / nginx:               n/a (nginx not installed)',
  )
  console.log(
    `  uncached Halyard / bare node proxy:     ${fmt(ratio(c.uncached, c.proxyFloor), 2)}×  (bare node proxy / nginx: ${c.nginx ? fmt(ratio(c.proxyFloor, c.nginx), 2) : 'n/a'}×)`,
  )
  console.log(
    `  uncached Halyard / coalescing proxy:    ${fmt(ratio(c.uncached, c.coalescing), 2)}×  (coalescing proxy / nginx: ${c.nginx ? fmt(ratio(c.coalescing, c.nginx), 2) : 'n/a'}×)`,
  )
  console.log(`  cached eth_chainId / bare node:http:    ${target(ratio(c.cached, c.floor), 0.9)}`)
  console.log(
    `  cached Halyard / reading constant:      ${fmt(ratio(c.cached, c.readingConstant), 2)}×  (reading constant / bare node:http: ${fmt(ratio(c.readingConstant, c.floor), 2)}×)`,
  )
  console.log(
    `  cached Halyard / headers constant:      ${fmt(ratio(c.cached, c.headersConstant), 2)}×  (headers constant / bare node:http: ${fmt(ratio(c.headersConstant, c.floor), 2)}×)`,
  )
  if (c.laneOff) {
    console.log(`  fast lane on / off, uncached:           ${fmt(ratio(c.uncached, c.laneOff.uncached), 2)}×`)
    console.log(`  fast lane on / off, cached:             ${fmt(ratio(c.cached, c.laneOff.cached), 2)}×`)
  }
  console.log(
    `  limited / unlimited key, uncached:      ${target(ratio(c.limitedUncached, c.uncached), 0.8)}`,
  )
  console.log(`  limited / unlimited key, cached:        ${target(ratio(c.limitedCached, c.cached), 0.8)}`)
  console.log(`  batch of 10 Halyard / direct anvil:     ${fmt(ratio(c.batch, direct.batch), 2)}×`)
  console.log(`  cached eth_chainId / direct anvil:      ${fmt(ratio(c.cached, direct.chainId), 2)}×`)
  console.log(
    `  added p50, uncached − direct anvil:     ${fmt(c.uncached.p50 - direct.blockNumber.p50, 2)} ms`,
  )
  // The same comparisons by CPU spent per request: steadier than req/s when neighbours load the machine.
  const cpuRatio = (label: string, a: Row, b: Row | undefined) => {
    if (!b || a.cpuUsPerReq === undefined || b.cpuUsPerReq === undefined) return
    console.log(
      `  CPU/req, ${label.padEnd(37)}${fmt(a.cpuUsPerReq, 1)} vs ${fmt(b.cpuUsPerReq, 1)} µs (${fmt(a.cpuUsPerReq / b.cpuUsPerReq, 2)}×)`,
    )
  }
  cpuRatio('distinct Halyard vs bare proxy:', c.distinct, c.proxyDistinct)
  cpuRatio('distinct Halyard vs reading proxy:', c.distinct, c.readingDistinct)
  cpuRatio('distinct Halyard vs nginx:', c.distinct, c.nginxDistinct)
  cpuRatio('uncached Halyard vs nginx:', c.uncached, c.nginx)
  cpuRatio('uncached Halyard vs bare proxy:', c.uncached, c.proxyFloor)
  cpuRatio('uncached Halyard vs coalescing:', c.uncached, c.coalescing)
  cpuRatio('cached Halyard vs bare node:', c.cached, c.floor)
  cpuRatio('cached Halyard vs reading constant:', c.cached, c.readingConstant)
  cpuRatio('cached Halyard vs headers constant:', c.cached, c.headersConstant)
  cpuRatio('limited vs unlimited, uncached:', c.limitedUncached, c.uncached)
  cpuRatio('limited vs unlimited, cached:', c.limitedCached, c.cached)
}
