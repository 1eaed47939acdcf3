/**
 * npm run bench:rpc — JSON-RPC gateway throughput and latency, all in one run, loopback only.
 *
 * Load generator: wrk when installed (C, one thread: it leaves the 2 cores to the servers),
 * else autocannon (Node, which takes about a core itself); BENCH_LOADGEN=autocannon forces it.
 * Every row of one run uses the same generator, so ratios compare like with like.
 *
 * Rows (50 connections, BENCH_SECONDS each, default 5, after a 1 s warm-up), first for one
 * process, then for BENCH_WORKERS (default 2; 0 skips) processes behind one port:
 *   anvil direct         eth_blockNumber, eth_chainId, batch of 10 (once: anvil is the same)
 *   nginx → anvil        `proxy_pass` with as many nginx workers (skipped without nginx)
 *   bare node:http       a constant answer (bench/lib/floor-http.ts; node:cluster for N): the
 *                        runtime's floor, what no Node gateway can beat
 *   bare node:http → anvil  the body's bytes forwarded over an undici keep-alive pool: the
 *                        least any Node gateway pays per uncached call
 *   Halyard, no fast lane  uncached and cached with HALYARD_FAST_LANE=0 (the framework's
 *                        generic pipeline), for the lane's effect in the same run (BENCH_LANE_AB=0 skips)
 *   distinct rows        nginx, the bare Node proxy and Halyard with a new eth_getBalance (a new
 *                        address, at latest) on every request: no cache and no coalescing of
 *                        identical in-flight calls can answer it — the way a busy dApp calls;
 *                        beside them the reading Node proxy, which also parses the call and puts
 *                        the client's id back: what reading a call costs before any feature
 *   reading node:http    the same reading, then a constant answer under the client's id: the
 *                        cached rows' floor for a gateway that reads the call
 *   headers node:http    the reading one answering with the rate-limit and request-id headers
 *                        the API promises on every answer: the least a cached answer costs
 *   coalescing node:http  the reading proxy joining identical calls in flight (one upstream call
 *                        answers them all, each under its own id), with the API's headers: what
 *                        Node allows on the uncached (coalescing) row
 *   request log on / off  uncached and cached, recording requests (the default) and with
 *                        HALYARD_REQUEST_LOG=off, loaded in turn (bench/lib/recording-ab.ts;
 *                        BENCH_RECORDING_AB=0 skips)
 *   Halyard              /v1/rpc/ethereum/devnet: uncached eth_blockNumber (identical bodies:
 *                        in-flight calls coalesce, so one upstream call answers several), cached eth_chainId,
 *                        a batch of 10, and the same two calls with a key on a limited plan
 *                        (counted by the limiter on every call) next to the enterprise key
 * One process runs on PGlite, with the Redis limiter when REDIS_URL is set (else in-process);
 * the workers run `HALYARD_WORKERS`-style (src/server/cluster.ts) on PostgreSQL and Redis and
 * need DATABASE_URL and REDIS_URL. Prints req/s, p50, p99 and the target ratios:
 * distinct ≥ 0.9 × the bare Node proxy, uncached (coalescing) ≥ 1.0 × nginx, cached ≥ 0.9 × bare
 * node:http (the gateway's per-core goals, docs/benchmarks.md), limited ≥ 0.8 × unlimited.
 *
 * BENCH_PROFILE=1 runs Halyard under `--cpu-prof` and prints, per Halyard row, the top
 * functions by self time and the totals per package (bench/lib/cpu-top.ts; BENCH_PROFILE_TOP
 * lines, default 25). The profiler costs some throughput: compare profiled runs with each other.
 *
 * Every server runs in its own child process, bundled and on plain Node as `halyard serve` runs
 * (bench/lib/built-child.ts; BENCH_TSX=1: the sources through tsx), so the load generator and the server under test
 * never share an event loop; only one server is loaded at a time, and all are stopped at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
import { startAnvil } from '../src/devnet/anvil.ts'
import { cpuTop, formatCpuTop, profileFiles } from './lib/cpu-top.ts'
import { type Floor, type FloorKind, READING_FLOOR_KEY, startFloor } from './lib/floor-http.ts'
import {
  type HalyardChild,
  serveHalyardChild,
  startHalyardChild,
  stopHalyardChild,
} from './lib/halyard-child.ts'
import { findNginx, startNginx } from './lib/nginx.ts'
import { treeCpuUs } from './lib/proc-cpu.ts'
import { recordingAb } from './lib/recording-ab.ts'
import { type Config, cpu, type Direct, fmt, printRatios, type Row } from './lib/rpc-report.ts'
import { distinctBalanceBody, findWrk, runWrk } from './lib/wrk.ts'

const CONNECTIONS = 50
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_S = 1
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2)
const WRK = process.env.BENCH_LOADGEN === 'autocannon' ? undefined : findWrk()
const PROFILE = process.env.BENCH_PROFILE === '1'
const PROFILE_TOP = Number(process.env.BENCH_PROFILE_TOP ?? 25)
const LANE_AB = process.env.BENCH_LANE_AB !== '0'
const RECORDING_AB = process.env.BENCH_RECORDING_AB !== '0'

const call = (method: string, params: unknown[] = [], id = 1) => ({ jsonrpc: '2.0', id, method, params })
/** The body of a distinct-calls row: a new eth_getBalance per request (bench/lib/wrk.ts). */
const DISTINCT = Symbol('a new eth_getBalance per request')

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/** A server under test: its URL and, where known, the process whose tree's CPU is counted. */
interface Target {
  url: string
  pid?: number | undefined
}

async function load(
  name: string,
  target: Target,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Row> {
  const { url, pid } = target
  const perReq = (cpu0: number | undefined, reqPerSec: number) => {
    const cpu1 = treeCpuUs(pid)
    return cpu0 === undefined || cpu1 === undefined || reqPerSec === 0
      ? undefined
      : (cpu1 - cpu0) / (reqPerSec * DURATION_S)
  }
  if (WRK) {
    const opts = {
      url,
      body: JSON.stringify(body === DISTINCT ? call('eth_chainId') : body),
      headers: { 'content-type': 'application/json', ...headers },
      connections: CONNECTIONS,
      distinct: body === DISTINCT,
    }
    await runWrk(WRK, { ...opts, seconds: WARMUP_S })
    const from = monotonicUs()
    const cpu0 = treeCpuUs(pid)
    const r = await runWrk(WRK, { ...opts, seconds: DURATION_S })
    const cpuUsPerReq = perReq(cpu0, r.reqPerSec)
    return { name, ...r, cpuUsPerReq, window: { from, to: monotonicUs() } }
  }
  let counter = 0
  const opts = {
    url,
    method: 'POST' as const,
    connections: CONNECTIONS,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body === DISTINCT ? call('eth_chainId') : body),
    ...(body === DISTINCT
      ? { requests: [{ setupRequest: (req: object) => ({ ...req, body: distinctBalanceBody(++counter) }) }] }
      : {}),
  }
  await autocannon({ ...opts, duration: WARMUP_S })
  const from = monotonicUs()
  const cpu0 = treeCpuUs(pid)
  const r = await autocannon({ ...opts, duration: DURATION_S })
  return {
    name,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
    cpuUsPerReq: perReq(cpu0, r.requests.average),
    window: { from, to: monotonicUs() },
  }
}

/**
 * A freshly started Halyard is still compiling its hot paths: its first row read lower than the
 * same row later in the run. Each Halyard gets a few seconds of the rows' calls, unmeasured.
 */
async function warmUp(target: Target, headers: Record<string, string>) {
  for (const body of [call('eth_blockNumber'), call('eth_chainId')]) {
    await load('warm-up', target, body, headers)
  }
}

type Run = (name: string, target: Target, body: unknown, headers?: Record<string, string>) => Promise<Row>

async function measure(
  workers: number,
  anvil: { url: string; port: number },
  nginxBin: string | undefined,
  run: Run,
  extra: (halyard: HalyardChild, tag: string) => Promise<void>,
): Promise<Config> {
  const cluster = workers > 1
  const tag = cluster ? `× ${workers}` : '× 1'
  const limiter = cluster || process.env.REDIS_URL ? 'Redis' : 'in-process'
  const title = cluster
    ? `${workers} workers (node:cluster; Halyard on PostgreSQL, ${limiter} limiter)`
    : `1 process (Halyard on PGlite, ${limiter} limiter)`
  console.log(`\n${title}`)
  const batch = Array.from({ length: 10 }, (_, i) => call('eth_blockNumber', [], i + 1))

  let nginxRow: Row | undefined
  let nginxDistinct: Row | undefined
  if (nginxBin) {
    const nginx = await startNginx(nginxBin, anvil.port, workers)
    try {
      nginxRow = await run(`nginx ${tag} → anvil · eth_blockNumber`, nginx, call('eth_blockNumber'))
      nginxDistinct = await run(`nginx ${tag} → anvil · distinct eth_getBalance`, nginx, DISTINCT)
    } finally {
      await nginx.stop()
    }
  }
  // Each floor's rows, the floor started for them and stopped after.
  const onFloor = async <T>(kind: FloorKind, rows: (floor: Floor) => Promise<T>): Promise<T> => {
    const floor = await startFloor(workers, kind === 'constant' ? undefined : anvil.url, undefined, kind)
    try {
      return await rows(floor)
    } finally {
      await floor.stop()
    }
  }
  const rk = { 'x-api-key': READING_FLOOR_KEY }
  const floorRow = await onFloor('constant', (f) =>
    run(`bare node:http ${tag} · constant answer`, f, call('eth_chainId')),
  )
  const readingConstant = await onFloor('reading-constant', (f) =>
    run(`reading node:http ${tag} · eth_chainId, constant answer`, f, call('eth_chainId'), rk),
  )
  const headersConstant = await onFloor('headers-constant', (f) =>
    run(
      `headers node:http ${tag} · eth_chainId, constant answer, the API's headers`,
      f,
      call('eth_chainId'),
      rk,
    ),
  )
  const [proxyRow, proxyDistinct] = await onFloor('proxy', async (f) => [
    await run(`bare node:http ${tag} → anvil · eth_blockNumber`, f, call('eth_blockNumber')),
    await run(`bare node:http ${tag} → anvil · distinct eth_getBalance`, f, DISTINCT),
  ])
  const readingDistinct = await onFloor('reading', (f) =>
    run(`reading node:http ${tag} → anvil · distinct eth_getBalance`, f, DISTINCT, rk),
  )
  const coalescingRow = await onFloor('coalescing', (f) =>
    run(
      `coalescing node:http ${tag} → anvil · eth_blockNumber, the API's headers`,
      f,
      call('eth_blockNumber'),
      rk,
    ),
  )
  let laneOff: Config['laneOff']
  if (!cluster && LANE_AB) {
    const off = await startHalyardChild(import.meta.filename, anvil.url, { env: { HALYARD_FAST_LANE: '0' } })
    try {
      const hk = { 'x-api-key': off.key }
      const t = { url: off.url, pid: off.child.pid }
      await warmUp(t, hk)
      laneOff = {
        uncached: await run(
          `Halyard ${tag}, no fast lane · eth_blockNumber (uncached)`,
          t,
          call('eth_blockNumber'),
          hk,
        ),
        cached: await run(`Halyard ${tag}, no fast lane · eth_chainId (cached)`, t, call('eth_chainId'), hk),
      }
    } finally {
      await stopChild(off)
    }
  }

  const profileDir = PROFILE ? mkdtempSync(path.join(tmpdir(), 'halyard-bench-prof-')) : undefined
  const halyard = await startHalyardChild(import.meta.filename, anvil.url, {
    workers: cluster ? workers : 0,
    ...(profileDir ? { profileDir } : {}),
  })
  try {
    const hk = { 'x-api-key': halyard.key }
    const lk = { 'x-api-key': halyard.limitedKey }
    const h = `Halyard ${tag}`
    const target = { url: halyard.url, pid: halyard.child.pid }
    await warmUp(target, hk)
    const config: Config = {
      title,
      nginx: nginxRow,
      nginxDistinct,
      floor: floorRow,
      readingConstant,
      headersConstant,
      proxyFloor: proxyRow,
      proxyDistinct,
      readingDistinct,
      coalescing: coalescingRow,
      laneOff,
      distinct: await run(`${h} · distinct eth_getBalance (no cache, no coalescing)`, target, DISTINCT, hk),
      uncached: await run(`${h} · eth_blockNumber (uncached)`, target, call('eth_blockNumber'), hk),
      cached: await run(`${h} · eth_chainId (cached)`, target, call('eth_chainId'), hk),
      batch: await run(`${h} · batch of 10 eth_blockNumber`, target, batch, hk),
      limitedUncached: await run(`${h} · eth_blockNumber, limited key`, target, call('eth_blockNumber'), lk),
      limitedCached: await run(`${h} · eth_chainId (cached), limited key`, target, call('eth_chainId'), lk),
      profiles: [],
    }
    await extra(halyard, h)
    await stopChild(halyard)
    if (profileDir) {
      const files = profileFiles(profileDir)
      for (const row of [
        config.distinct,
        config.uncached,
        config.cached,
        config.batch,
        config.limitedUncached,
        config.limitedCached,
      ]) {
        config.profiles.push({
          row,
          report: formatCpuTop(cpuTop(files, row.window), PROFILE_TOP, row.reqPerSec * DURATION_S),
        })
      }
      rmSync(profileDir, { recursive: true, force: true })
    }
    return config
  } finally {
    await stopChild(halyard)
  }
}

async function main() {
  const anvil = await startAnvil()
  try {
    // Blocks to read: block 1 is far below the finality depth once 10 more exist.
    await fetch(anvil.url, { method: 'POST', body: JSON.stringify(call('anvil_mine', ['0xc'])) })
    const nginxBin = findNginx()
    const rows: Row[] = []
    const run: Run = async (name, target, body, headers) => {
      const row = await load(name, target, body, headers)
      rows.push(row)
      console.log(
        `  ${name}: ${fmt(row.reqPerSec)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${cpu(row)} µs CPU/req`,
      )
      return row
    }
    const load0 = loadavg()[0]!
    console.log(
      `bench:rpc — ${WRK ? 'wrk (1 thread)' : 'autocannon'}, ${CONNECTIONS} connections, ${DURATION_S} s per row${PROFILE ? ', Halyard under --cpu-prof' : ''}; load average ${fmt(load0, 2)}`,
    )
    const batch = Array.from({ length: 10 }, (_, i) => call('eth_blockNumber', [], i + 1))
    const direct: Direct = {
      blockNumber: await run('anvil direct · eth_blockNumber', anvil, call('eth_blockNumber')),
      chainId: await run('anvil direct · eth_chainId', anvil, call('eth_chainId')),
      batch: await run('anvil direct · batch of 10 eth_blockNumber', anvil, batch),
    }
    const finalized = call('eth_getBlockByNumber', ['0x1', false])
    const configs = [
      await measure(1, anvil, nginxBin, run, async (h, tag) => {
        await run(
          `${tag} · eth_getBlockByNumber(finalized, cached)`,
          { url: h.url, pid: h.child.pid },
          finalized,
          {
            'x-api-key': h.key,
          },
        )
      }),
    ]
    const abLines = RECORDING_AB ? await recordingAb(import.meta.filename, anvil.url, run, stopChild) : []
    let clusterNote: string | undefined
    if (WORKERS > 1 && process.env.DATABASE_URL && process.env.REDIS_URL) {
      configs.push(await measure(WORKERS, anvil, nginxBin, run, async () => {}))
    } else if (WORKERS > 1) {
      clusterNote = `${WORKERS} workers: skipped, they need DATABASE_URL and REDIS_URL`
    }

    console.log(
      '\n| row | req/s | p50 ms | p99 ms | server CPU µs/req | errors |\n|---|---:|---:|---:|---:|---:|',
    )
    for (const r of rows)
      console.log(`| ${r.name} | ${fmt(r.reqPerSec)} | ${r.p50} | ${r.p99} | ${cpu(r)} | ${r.errors} |`)
    if (!nginxBin)
      console.log('| nginx → anvil | skipped: nginx is not installed (apt-get install nginx-light) | | | |')
    if (clusterNote) console.log(`| ${clusterNote} | | | | |`)
    if (!WRK)
      console.log(
        '\nnote: autocannon (wrk not installed, or BENCH_LOADGEN=autocannon) shares the 2 cores with the servers',
      )
    for (const c of configs) printRatios(c, direct)
    if (abLines.length > 0) console.log(`\nrequest explorer recording, 1 process:\n${abLines.join('\n')}`)
    console.log(
      `\nload average: ${fmt(load0, 2)} before, ${fmt(loadavg()[0]!, 2)} after (the bench included)`,
    )
    const errors = rows.reduce((n, r) => n + r.errors, 0)
    if (errors > 0) console.log(`WARNING: ${errors} failed responses during the run`)
    for (const c of configs)
      for (const p of c.profiles)
        console.log(`\nprofile · ${p.row.name} (${fmt(p.row.reqPerSec)} req/s)\n${p.report}`)
  } finally {
    await anvil.stop()
  }
}

/** Disconnecting makes the child stop cleanly (and write its profiles, under --cpu-prof). */
const stopChild = (h: HalyardChild) => stopHalyardChild(h, PROFILE ? 30_000 : 5_000)

if (process.argv[2] === '--server') {
  await serveHalyardChild(process.argv[3] ?? '', '/rpc/ethereum/devnet', { finalityDepth: 2 })
} else {
  await main()
}
