/**
 * npm run bench:gas — gas price estimates, loopback only, bounded in time.
 *
 * Rows (autocannon, 50 connections, BENCH_SECONDS each (default 5), after a 1 s warm-up):
 *   baseline  anvil direct · eth_feeHistory(20 blocks, latest, [10, 50, 90]) — the raw input a
 *             client would fetch and post-process itself
 *   gateway   the same eth_feeHistory through Halyard's /rpc (auth, limits, proxying): what a
 *             client pays to get the raw data through Halyard and compute fees itself
 *   Halyard   GET /v1/gas/ethereum-devnet/prices with an enterprise key — auth, limits, the
 *             estimate (computed once per head, cached), JSON out
 * anvil mines a block every second with a few transactions of varied tips, so Halyard's cache
 * turns over during the run. Prints req/s, p50, p99 and the ratios.
 * Halyard runs in a child process (this file with `--server`), so the load generator and the
 * server do not share an event loop. Everything started here is stopped at the end.
 */
import autocannon from 'autocannon'
import { startAnvil } from '../src/devnet/anvil.ts'
import { rpc } from '../src/devnet/multicall3.ts'
import { type HalyardChild, serveHalyardChild, startHalyardChild } from './lib/halyard-child.ts'

const CONNECTIONS = 50
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_S = 1

interface Row {
  name: string
  reqPerSec: number
  p50: number
  p99: number
  errors: number
}

async function load(name: string, opts: autocannon.Options): Promise<Row> {
  const base = { connections: CONNECTIONS, ...opts }
  await autocannon({ ...base, duration: WARMUP_S })
  const r = await autocannon({ ...base, duration: DURATION_S })
  return {
    name,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
  }
}

async function main() {
  const anvil = await startAnvil({ blockTime: 1 })
  let halyard: HalyardChild | undefined
  let traffic: NodeJS.Timeout | undefined
  try {
    const accounts = (await rpc(anvil.url, 'eth_accounts', [])) as string[]
    // A few transfers with varied tips every half second: blocks that carry fee data.
    let n = 0
    traffic = setInterval(() => {
      const from = accounts[1 + (n % 8)]
      const tip = BigInt(1 + (n % 7)) * 10n ** 9n
      n++
      rpc(anvil.url, 'eth_sendTransaction', [
        {
          from,
          to: '0x000000000000000000000000000000000000beef',
          value: '0x1',
          gas: '0x5208',
          maxPriorityFeePerGas: `0x${tip.toString(16)}`,
          maxFeePerGas: `0x${(tip + 50n * 10n ** 9n).toString(16)}`,
        },
      ]).catch(() => {})
    }, 500)
    await new Promise((r) => setTimeout(r, 3_000))
    halyard = await startHalyardChild(import.meta.filename, anvil.url)

    const feeHistory = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_feeHistory',
      params: ['0x14', 'latest', [10, 50, 90]],
    })
    console.log(`bench:gas — ${CONNECTIONS} connections, ${DURATION_S} s per row, anvil block time 1 s`)
    const baseline = await load('anvil direct · eth_feeHistory(20, latest, [10,50,90])', {
      url: anvil.url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: feeHistory,
    })
    const viaGateway = await load('Halyard /rpc · eth_feeHistory (raw data through the gateway)', {
      url: halyard.url.replace('/gas/ethereum-devnet/prices', '/rpc/ethereum/devnet'),
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': halyard.key },
      body: feeHistory,
    })
    const viaHalyard = await load('Halyard · GET /v1/gas/ethereum-devnet/prices', {
      url: halyard.url,
      method: 'GET',
      headers: { 'x-api-key': halyard.key },
    })
    const rows = [baseline, viaGateway, viaHalyard]
    console.log('\n| row | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|')
    for (const r of rows)
      console.log(`| ${r.name} | ${r.reqPerSec.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} |`)
    const ratio = (a: Row, b: Row) => (a.reqPerSec / b.reqPerSec).toFixed(2)
    console.log(
      `\nratio estimate via Halyard / eth_feeHistory on anvil direct (req/s): ${ratio(viaHalyard, baseline)}×`,
    )
    console.log(
      `ratio estimate via Halyard / eth_feeHistory through Halyard /rpc:   ${ratio(viaHalyard, viaGateway)}×`,
    )
    if (rows.some((r) => r.errors > 0)) console.log('WARNING: failed responses during the run')
  } finally {
    if (traffic) clearInterval(traffic)
    if (halyard) {
      const child = halyard.child
      const exited = new Promise((r) => child.once('exit', r))
      child.disconnect()
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    await anvil.stop()
  }
}

if (process.argv[2] === '--server') {
  await serveHalyardChild(process.argv[3] ?? '', '/gas/ethereum-devnet/prices')
} else {
  await main()
}
