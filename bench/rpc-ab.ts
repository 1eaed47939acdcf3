/**
 * npm run bench:rpc-ab — bench:rpc's distinct row alone (a new eth_getBalance on every request:
 * neither the cache nor coalescing answers it), for the bare Node proxy, the reading Node proxy
 * (it also parses the call: bench/lib/floor-http.ts), the socket Node proxy (the bare proxy with a
 * hand-written HTTP/1.1 client instead of undici), the bare proxy writing its answers at the end
 * of the turn as Halyard's lane does, and Halyard from this checkout and from
 * others, alternated BENCH_REPS times (default 3) in one run, so that before and after share the
 * machine's state: the way to tell a change of a few µs per call from the noise. BENCH_ROW=cached
 * measures the cached row (eth_chainId) against the bare, the reading and the headers constant
 * servers instead (the headers one: the reading one answering with the rate-limit and
 * request-id headers the API promises on every answer), and the bare and the headers ones again
 * with their answers written at the end of the turn, as Halyard's lane writes them;
 * BENCH_ROW=identical the coalescing row (one eth_blockNumber body on every connection) against
 * nginx (when installed), the bare Node proxy and the coalescing Node proxy (the reading proxy
 * joining identical calls in flight, answering with the API's headers: what Node allows there).
 * BENCH_WORKERS=N (default 1) runs every server with N processes (nginx workers, node:cluster for
 * the floors, Halyard's cluster, which needs DATABASE_URL and REDIS_URL). Each round prints every
 * Halyard's req/s over each baseline's in that round (and each later floor's over the first: what
 * Node allows for the floor's extra step; and this checkout's over each other build's), and the
 * end their medians: a ratio taken within a round cancels most of the machine's drift,
 * which moves the servers' own medians by more than the changes being judged. Before each round
 * it times fixed work in 100 ms windows (lib/steadiness.ts) and prints their spread: past 10 %
 * the machine itself moved more than a few-per-cent change, and no ratio of that run judges one.
 *
 * BENCH_AB=DIR[,DIR…]: other checkouts of Halyard to run beside this one, each serving its own
 * sources through its own copy of this file (for an older commit: `git worktree add DIR REV`,
 * `ln -s "$PWD/node_modules" DIR/`, and copy this commit's bench/ and bin/ into DIR).
 *
 * Per row: req/s, p50, the server's CPU µs per request, its main thread's part (the rest is V8's
 * helper threads: garbage collection, compilers), the main thread's time in the kernel, and the
 * CPU anvil spent per request in the same window (the node shares the machine's two cores).
 * BENCH_PROFILE=1 runs each server (the floors too) under `--cpu-prof` and prints its top
 * functions in µs per request (BENCH_PROFILE_TOP of them). BENCH_SECONDS per row (default 5)
 * after BENCH_WARMUP seconds of the same load (default 10: Halyard's compiler settles in 6–10 s,
 * the floors' in 2–4; BENCH_CURVE=1 prints each 2 s of the warm-up); one process on PGlite, with
 * the Redis limiter when REDIS_URL is set.
 * BENCH_NODE_ARGS: Node flags for every server child alike. */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { startAnvil } from '../src/devnet/anvil.ts'
import { cpuTop, formatCpuTop, profileFiles } from './lib/cpu-top.ts'
import { type FloorKind, READING_FLOOR_KEY, startFloor } from './lib/floor-http.ts'
import { serveHalyardChild, startHalyardChild, stopHalyardChild } from './lib/halyard-child.ts'
import { findNginx, startNginx } from './lib/nginx.ts'
import { mainThreadCpuUs, mainThreadKernelUs, treeCpuUs } from './lib/proc-cpu.ts'
import {
  formatSteadiness,
  measureSteadiness,
  type Steadiness,
  summarizeSteadiness,
} from './lib/steadiness.ts'
import { findWrk, runWrk } from './lib/wrk.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 10)
/** BENCH_CURVE=1: the warm-up in 2 s windows, each printed (req/s, CPU µs per call): the JIT settling. */
const CURVE = process.env.BENCH_CURVE === '1'
const REPS = Number(process.env.BENCH_REPS ?? 3)
const PROFILE = process.env.BENCH_PROFILE === '1'
/** BENCH_PROFILE_TOP: how many functions a profile lists (default 30). */
const PROFILE_TOP = Number(process.env.BENCH_PROFILE_TOP ?? 30)
const OTHERS = (process.env.BENCH_AB ?? '').split(',').filter((d) => d !== '')
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1)
const NGINX = findNginx()

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

interface Measured {
  reqPerSec: number
  p50: number
  cpuUs: number
  mainUs: number
  /** The main thread's time in the kernel. */
  kernelUs: number
  /** anvil's CPU per request in the same window: the node's share of the machine. */
  anvilUs: number
  window: { from: number; to: number }
}

type RowKind = 'distinct' | 'cached' | 'identical'
const ROW: RowKind =
  process.env.BENCH_ROW === 'cached'
    ? 'cached'
    : process.env.BENCH_ROW === 'identical'
      ? 'identical'
      : 'distinct'
/** The body wrk sends; for the distinct row its Lua script replaces it with a new eth_getBalance per request. */
const BODIES: Record<RowKind, string> = {
  distinct: '{}',
  cached: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  identical: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
}

async function measureRow(
  wrk: string,
  url: string,
  pid: number | undefined,
  headers: Record<string, string>,
  anvilPid: number | undefined,
): Promise<Measured> {
  const opts = {
    url,
    // For the distinct row wrk's Lua script replaces the body with a new eth_getBalance on every request.
    body: BODIES[ROW],
    headers: { 'content-type': 'application/json', ...headers },
    connections: 50,
    distinct: ROW === 'distinct',
  }
  // In 2 s windows, each printed, with BENCH_CURVE=1; else in one.
  const step = CURVE ? 2 : WARMUP_SECONDS
  for (let at = 0; at < WARMUP_SECONDS; at += step) {
    const seconds = Math.min(step, WARMUP_SECONDS - at)
    const c0 = treeCpuUs(pid) ?? 0
    const w = await runWrk(wrk, { ...opts, seconds })
    const us = ((treeCpuUs(pid) ?? 0) - c0) / (w.reqPerSec * seconds)
    if (CURVE)
      console.log(
        `    warm-up ${at}–${at + seconds} s: ${Math.round(w.reqPerSec)} req/s, ${us.toFixed(1)} µs CPU/req`,
      )
  }
  const from = monotonicUs()
  const cpu0 = treeCpuUs(pid) ?? 0
  const main0 = mainThreadCpuUs(pid) ?? 0
  const kernel0 = mainThreadKernelUs(pid) ?? 0
  const anvil0 = treeCpuUs(anvilPid) ?? 0
  const r = await runWrk(wrk, { ...opts, seconds: SECONDS })
  const calls = r.reqPerSec * SECONDS
  return {
    reqPerSec: r.reqPerSec,
    p50: r.p50,
    cpuUs: ((treeCpuUs(pid) ?? 0) - cpu0) / calls,
    mainUs: WORKERS > 1 ? Number.NaN : ((mainThreadCpuUs(pid) ?? 0) - main0) / calls,
    kernelUs: WORKERS > 1 ? Number.NaN : ((mainThreadKernelUs(pid) ?? 0) - kernel0) / calls,
    anvilUs: ((treeCpuUs(anvilPid) ?? 0) - anvil0) / calls,
    window: { from, to: monotonicUs() },
  }
}

/** A profiled server's top functions in µs per request; the profile's folder is removed. */
function printProfile(dir: string, m: Measured): void {
  console.log(formatCpuTop(cpuTop(profileFiles(dir), m.window), PROFILE_TOP, m.reqPerSec * SECONDS))
  rmSync(dir, { recursive: true, force: true })
}

const READING = { 'x-api-key': READING_FLOOR_KEY }
/** A baseline server: one of the Node floors (bench/lib/floor-http.ts), or nginx. */
type Baseline = { name: string; kind: FloorKind | 'nginx'; headers: Record<string, string> }
const BASELINES: Record<RowKind, Baseline[]> = {
  distinct: [
    { name: 'bare Node proxy', kind: 'proxy', headers: {} },
    { name: 'reading Node proxy', kind: 'reading', headers: READING },
    { name: 'socket Node proxy', kind: 'socket-proxy', headers: {} },
    { name: 'bare Node proxy, end-of-turn writes', kind: 'proxy-turn', headers: {} },
  ],
  cached: [
    { name: 'bare constant server', kind: 'constant', headers: {} },
    { name: 'reading constant server', kind: 'reading-constant', headers: READING },
    { name: 'headers constant server', kind: 'headers-constant', headers: READING },
    { name: 'bare constant server, end-of-turn writes', kind: 'constant-turn', headers: {} },
    { name: 'headers constant server, end-of-turn writes', kind: 'headers-constant-turn', headers: READING },
  ],
  identical: [
    { name: 'nginx', kind: 'nginx', headers: {} },
    { name: 'bare Node proxy', kind: 'proxy', headers: {} },
    { name: 'coalescing Node proxy', kind: 'coalescing', headers: READING },
  ],
}

/** Starts a baseline with WORKERS processes in front of `anvil` (nginx only where installed). */
function startBaseline(b: Baseline, anvil: { url: string; port: number }, profileDir: string | undefined) {
  if (b.kind !== 'nginx') return startFloor(WORKERS, anvil.url, profileDir, b.kind)
  return startNginx(NGINX ?? 'nginx', anvil.port, WORKERS)
}

/** Of an even count, the mean of the middle two: the upper one alone leaned every even-round median up. */
const median = (values: number[]) => {
  if (values.length === 0) return 0
  const v = [...values].sort((a, b) => a - b)
  const mid = Math.floor(v.length / 2)
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
}

// With several processes the main thread read is the primary's, which serves nothing, and
// nginx's is its master's: left out (NaN).
const threads = (m: Measured) =>
  Number.isNaN(m.mainUs) ? '' : ` (main thread ${m.mainUs.toFixed(1)}, kernel ${m.kernelUs.toFixed(1)})`
const line = (name: string, m: Measured) =>
  `  ${name.padEnd(44)} ${Math.round(m.reqPerSec).toLocaleString('en-US').padStart(7)} req/s  p50 ${m.p50.toFixed(2)} ms  ${m.cpuUs.toFixed(1)} µs CPU/req${threads(m)}; anvil ${m.anvilUs.toFixed(1)}`

async function main() {
  const wrk = findWrk()
  if (!wrk) {
    console.error('bench:rpc-ab needs wrk (apt-get install wrk)')
    process.exit(2)
  }
  const scripts = [
    { name: 'Halyard (this checkout)', script: import.meta.filename },
    ...OTHERS.map((dir) => ({ name: `Halyard (${dir})`, script: path.join(dir, 'bench', 'rpc-ab.ts') })),
  ]
  if (!(WARMUP_SECONDS >= 0)) {
    console.error(`BENCH_WARMUP is seconds of warm-up (0 or more), not ${process.env.BENCH_WARMUP}`)
    process.exit(2)
  }
  if (WORKERS > 1 && !(process.env.DATABASE_URL && process.env.REDIS_URL)) {
    console.error('BENCH_WORKERS > 1 runs Halyard as a cluster: it needs DATABASE_URL and REDIS_URL')
    process.exit(2)
  }
  const baselines = BASELINES[ROW].filter((b) => b.kind !== 'nginx' || NGINX !== undefined)
  if (baselines.length < BASELINES[ROW].length)
    console.log('nginx is not installed (apt-get install nginx-light): its row is skipped')
  const anvil = await startAnvil()
  const load0 = loadavg()[0] ?? 0
  const all = new Map<string, Measured[]>()
  const checks: Steadiness[] = []
  /** "Halyard / baseline" → that ratio of req/s in each round. */
  const ratios = new Map<string, number[]>()
  const note = (pair: string, ratio: number) => {
    ratios.set(pair, [...(ratios.get(pair) ?? []), ratio])
    console.log(`  ${pair}: ${ratio.toFixed(2)}×`)
  }
  const keep = (name: string, m: Measured) => {
    all.set(name, [...(all.get(name) ?? []), m])
    console.log(line(name, m))
  }
  console.log(`bench:rpc-ab — the ${ROW} row, ${WORKERS} process${WORKERS > 1 ? 'es' : ''} per server`)
  try {
    for (let rep = 1; rep <= REPS; rep++) {
      console.log(`round ${rep} of ${REPS}`)
      // Before the round, with no server loaded: how steady the machine is (lib/steadiness.ts).
      const steady = measureSteadiness()
      checks.push(steady)
      console.log(`  ${formatSteadiness(steady)}`)
      const round = new Map<string, number>()
      /** Each build's name and req/s in this round, this checkout first. */
      const builds: [string, number][] = []
      for (const b of baselines) {
        const dir =
          PROFILE && b.kind !== 'nginx' ? mkdtempSync(path.join(tmpdir(), 'halyard-rpc-ab-')) : undefined
        const f = await startBaseline(b, anvil, dir)
        let m: Measured
        try {
          m = await measureRow(wrk, f.url, f.pid, b.headers, anvil.pid)
        } finally {
          await f.stop()
        }
        if (b.kind === 'nginx') Object.assign(m, { mainUs: Number.NaN, kernelUs: Number.NaN })
        keep(b.name, m)
        // A floor beside the first baseline: what Node itself allows for that extra step.
        const [first] = round
        if (first) note(`${b.name} / ${first[0]}`, m.reqPerSec / first[1])
        round.set(b.name, m.reqPerSec)
        if (dir) printProfile(dir, m)
      }
      for (const s of scripts) {
        const dir = PROFILE ? mkdtempSync(path.join(tmpdir(), 'halyard-rpc-ab-')) : undefined
        const opts = { ...(dir ? { profileDir: dir } : {}), ...(WORKERS > 1 ? { workers: WORKERS } : {}) }
        const h = await startHalyardChild(s.script, anvil.url, opts)
        let m: Measured
        try {
          m = await measureRow(wrk, h.url, h.child.pid, { 'x-api-key': h.key }, anvil.pid)
        } finally {
          await stopHalyardChild(h, PROFILE ? 30_000 : 5_000)
        }
        keep(s.name, m)
        if (dir) printProfile(dir, m)
        for (const [base, rps] of round) note(`${s.name} / ${base}`, m.reqPerSec / rps)
        builds.push([s.name, m.reqPerSec])
      }
      // This checkout over each other build in the round: the A/B itself.
      const [[ours, oursRps] = ['', 0], ...others] = builds
      for (const [other, rps] of others) note(`${ours} / ${other}`, oursRps / rps)
    }
  } finally {
    await anvil.stop()
  }
  console.log(
    `\nmedians over ${REPS} rounds (load average ${load0.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after):`,
  )
  for (const [name, rows] of all) {
    const med = (f: (m: Measured) => number) => median(rows.map(f))
    console.log(
      line(name, {
        reqPerSec: med((m) => m.reqPerSec),
        p50: med((m) => m.p50),
        cpuUs: med((m) => m.cpuUs),
        mainUs: med((m) => m.mainUs),
        kernelUs: med((m) => m.kernelUs),
        anvilUs: med((m) => m.anvilUs),
        window: { from: 0, to: 0 },
      }),
    )
  }
  console.log(summarizeSteadiness(checks))
  console.log('req/s ratios taken within each round: median (range)')
  for (const [pair, values] of ratios) {
    const lo = Math.min(...values).toFixed(2)
    const hi = Math.max(...values).toFixed(2)
    console.log(`  ${pair.padEnd(60)} ${median(values).toFixed(2)}×  (${lo}–${hi})`)
  }
}

if (process.argv[2] === '--server') {
  await serveHalyardChild(process.argv[3] ?? '', '/rpc/ethereum/devnet', { finalityDepth: 2 })
} else {
  await main()
}
