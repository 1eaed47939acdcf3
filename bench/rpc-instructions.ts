/**
 * npm run bench:rpc-instructions — user-space instructions per distinct JSON-RPC call, counted by
 * valgrind's callgrind: Halyard against the bare Node proxy (bench/lib/floor-http.ts), each a
 * server in its own process in front of one anvil. Unlike req/s and CPU time, an instruction count
 * does not move with what else the machine runs, so a change to the gateway's hot path can be
 * compared across runs and across a loaded machine (docs/benchmarks.md). BENCH_ROW=cached counts
 * the cached row instead (one eth_chainId body, answered from Halyard's cache) against the bare
 * constant server and the headers constant server (it reads the call and answers with the
 * rate-limit and request-id headers the API promises on every answer). Halyard's count moves by a
 * few per cent from run to run (the floors' by 1–2 %): BENCH_REPS counts it that many times and
 * BENCH_AB counts other checkouts beside it, alternated, and the ratios use the medians.
 *
 * Each server runs under `valgrind --tool=callgrind --instr-atstart=no`, gets BENCH_WARMUP
 * (3000) distinct eth_getBalance calls, 10 in flight, with counting off (the JIT settles), then
 * BENCH_CALLS (2000) with counting on (`callgrind_control -i on/off`), and the count is dumped.
 * The servers run as the other benches run them (bench/lib/built-child.ts: bundled, as
 * `halyard serve` runs; BENCH_TSX=1: through tsx).
 * The main thread's count is printed apart: V8's helper threads (concurrent marking, compiling)
 * add a share that swings with when a major GC lands in the window. What it includes: everything
 * the process does meanwhile, so time-driven work (health checks, flushes) adds a little, and
 * more under valgrind's ~50× slowdown than at full speed; Halyard runs with
 * HALYARD_REQUEST_LOG=off by default (BENCH_REQUEST_LOG=on keeps it), because at valgrind's pace
 * every call fits the request log's per-account budget and would be kept, which at full speed
 * only the first ones per interval are. What it leaves out: the kernel's share (socket writes),
 * which the two servers pay alike. BENCH_KEEP=1 keeps the callgrind files (one per thread), to
 * read with `callgrind_annotate DIR/cg.PID.1-01`. Needs valgrind (`apt-get install valgrind`);
 * a few minutes.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { startAnvil } from '../src/devnet/anvil.ts'
import { childCommand } from './lib/built-child.ts'
import { type FloorKind, READING_FLOOR_KEY } from './lib/floor-http.ts'
import { DATABASE_ENV } from './lib/halyard-child.ts'

const WARMUP = Number(process.env.BENCH_WARMUP ?? 3000)
const CALLS = Number(process.env.BENCH_CALLS ?? 2000)
const IN_FLIGHT = 10
const CACHED = process.env.BENCH_ROW === 'cached'
/** BENCH_REPS (default 1): each Halyard counted that many times, alternated; medians printed. */
const REPS = Number(process.env.BENCH_REPS ?? 1)
/**
 * BENCH_AB=DIR[,DIR…]: other checkouts of Halyard counted beside this one, each its own
 * bench/rpc.ts (for an older commit: `git worktree add DIR REV`, `ln -s "$PWD/node_modules" DIR/`).
 */
const HALYARDS = [
  { name: 'Halyard', script: 'bench/rpc.ts' },
  ...(process.env.BENCH_AB ?? '')
    .split(',')
    .filter((d) => d !== '')
    .map((dir) => ({ name: `Halyard (${dir})`, script: path.resolve(dir, 'bench', 'rpc.ts') })),
]
/** The cached row's call: the first is forwarded, every later one answered from Halyard's cache. */
const CACHED_BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'
const REQUEST_LOG = process.env.BENCH_REQUEST_LOG === 'on' ? 'on' : 'off'
/**
 * BENCH_DATABASE=postgres: Halyard on a scratch schema of DATABASE_URL instead of PGlite. PGlite
 * runs its queries in the measured process, and the time-driven ones (a hot key's refresh every
 * 750 ms, the usage and last-used flushes) grow per call with valgrind's pace: on a loaded
 * machine they were most of the count.
 */
const DATABASE = process.env.BENCH_DATABASE === 'postgres' ? process.env.DATABASE_URL : undefined
if (process.env.BENCH_DATABASE === 'postgres' && !DATABASE)
  throw new Error('BENCH_DATABASE=postgres needs DATABASE_URL')
/**
 * BENCH_IDLE_S (default 20; 0 skips): after the counted calls, that many seconds counted with no
 * calls. Their rate times the counted window's wall time is what the timers alone would have
 * cost meanwhile; it is printed, and the count per call less it, because valgrind's pace (and so
 * that share) moves with the machine's load. Work that calls start (a hot key's refresh) is not
 * in it.
 */
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 20)
/** BENCH_KEEP=1 keeps each server's callgrind files (for callgrind_annotate) and prints where. */
const KEEP = process.env.BENCH_KEEP === '1'

interface Hello {
  url: string
  key?: string
}

/** A server under callgrind with counting off, once it printed its URL. */
async function startCounted(
  script: string,
  args: string[],
  dir: string,
): Promise<{ child: ChildProcess; hello: Hello }> {
  const { file, execArgv } = await childCommand(script)
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      // One file per thread: the main thread's count apart from V8's helper threads (concurrent
      // marking and compiling), whose share swings from run to run with when a major GC lands.
      '--separate-threads=yes',
      `--callgrind-out-file=${path.join(dir, 'cg.%p')}`,
      process.execPath,
      ...execArgv,
      file,
      ...args,
    ],
    {
      cwd: path.resolve(import.meta.dirname, '..'),
      stdio: ['ignore', 'pipe', 'ignore'],
      env: {
        ...process.env,
        HALYARD_REQUEST_LOG: REQUEST_LOG,
        ...(DATABASE ? { [DATABASE_ENV]: DATABASE } : {}),
      },
    },
  )
  const hello = await new Promise<Hello>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8')
      const line = out.split('\n').find((l) => l.startsWith('{') && l.includes('"url"'))
      if (line) resolve(JSON.parse(line) as Hello)
    })
    child.once('exit', (code) => reject(new Error(`server under valgrind exited with code ${code}`)))
  })
  return { child, hello }
}

/**
 * `calls` calls, IN_FLIGHT at a time over keep-alive: distinct eth_getBalance calls, or with
 * BENCH_ROW=cached the one eth_chainId call; how many failed.
 */
function sendCalls(hello: Hello, calls: number, offset: number): Promise<number> {
  const u = new URL(hello.url)
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  const seed = Math.floor(Math.random() * 0x7fffffff)
  let sent = 0
  let done = 0
  let failed = 0
  return new Promise((resolve) => {
    const next = () => {
      if (sent >= calls) return
      const i = offset + sent++
      const address = `0x${seed.toString(16).padStart(8, '0')}${i.toString(16).padStart(8, '0')}${'0'.repeat(24)}`
      const body = CACHED
        ? CACHED_BODY
        : JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [address, 'latest'] })
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (hello.key) headers['x-api-key'] = hello.key
      const req = http.request(
        { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers },
        (res) => {
          let text = ''
          res.on('data', (c: Buffer) => {
            text += c.toString('utf8')
          })
          res.on('end', () => {
            if (res.statusCode !== 200 || !text.includes('"result"')) failed++
            if (++done === calls) {
              agent.destroy()
              resolve(failed)
            } else next()
          })
        },
      )
      req.on('error', () => {
        failed++
        if (++done === calls) resolve(failed)
        else next()
      })
      req.end(body)
    }
    for (let i = 0; i < IN_FLIGHT; i++) next()
  })
}

interface Counted {
  /** All threads, per call. */
  total: number
  /** The main (JavaScript) thread alone, per call. */
  main: number
  /** The counted calls' wall time under valgrind, seconds. */
  windowS: number
  /** With BENCH_IDLE_S: instructions per second with no calls (timers, flushes, health checks). */
  idle?: { total: number; main: number }
}

/** Instructions per call of one server: warm-up uncounted, then CALLS counted. */
async function measure(name: string, script: string, args: string[], key?: string): Promise<Counted> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-ir-'))
  const server = await startCounted(script, args, dir)
  const { child } = server
  // A reading floor checks a key as the gateway does (bench/lib/floor-http.ts).
  const hello = key ? { ...server.hello, key } : server.hello
  try {
    const pid = String(child.pid)
    const warmFailed = await sendCalls(hello, WARMUP, 0)
    execFileSync('callgrind_control', ['-i', 'on', pid], { stdio: 'ignore' })
    const started = performance.now()
    const failed = await sendCalls(hello, CALLS, WARMUP)
    windowS = (performance.now() - started) / 1000
    execFileSync('callgrind_control', ['-i', 'off', pid], { stdio: 'ignore' })
    execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' })
    if (warmFailed + failed > 0) throw new Error(`${name}: ${warmFailed + failed} calls failed`)
    // The dump is written when the server next runs: wait for it.
    await dumped(dir, CALLS_PART)
    if (IDLE_S > 0) {
      // The same server with no calls: what its timers cost per second at valgrind's pace.
      execFileSync('callgrind_control', ['-i', 'on', pid], { stdio: 'ignore' })
      await new Promise((r) => setTimeout(r, IDLE_S * 1000))
      execFileSync('callgrind_control', ['-i', 'off', pid], { stdio: 'ignore' })
      execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' })
      await dumped(dir, IDLE_PART)
    }
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGINT')
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))])
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  const total = counted(dir, CALLS_PART)
  const main = counted(dir, CALLS_PART, MAIN_THREAD)
  const idle =
    IDLE_S > 0
      ? { total: counted(dir, IDLE_PART) / IDLE_S, main: counted(dir, IDLE_PART, MAIN_THREAD) / IDLE_S }
      : undefined
  if (KEEP) console.log(`  ${name}: callgrind files kept in ${dir}`)
  else rmSync(dir, { recursive: true, force: true })
  if (total === 0) throw new Error(`${name}: callgrind wrote no counts`)
  return { total: total / CALLS, main: main / CALLS, windowS, ...(idle ? { idle } : {}) }
}

let windowS = 0

async function dumped(dir: string, part: RegExp): Promise<void> {
  for (let i = 0; i < 60 && counted(dir, part) === 0; i++) await new Promise((r) => setTimeout(r, 500))
}

/** The first dump (the counted calls) and the second (the idle seconds): cg.PID.1-NN, cg.PID.2-NN. */
const CALLS_PART = /\.1-\d+$/
const IDLE_PART = /\.2-\d+$/
/** callgrind's file of a process's first thread (`--separate-threads=yes` names them -01, -02…). */
const MAIN_THREAD = /-01$/

/** Counting was on only in the dumped windows: a part's files, all threads or `thread`'s. */
function counted(dir: string, part: RegExp, thread?: RegExp): number {
  let total = 0
  for (const f of readdirSync(dir)) {
    if (!part.test(f) || (thread && !thread.test(f))) continue
    const m = /^totals: (\d+)/m.exec(readFileSync(path.join(dir, f), 'utf8'))
    if (m) total += Number(m[1])
  }
  return total
}

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
    execFileSync('callgrind_control', ['-h'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

if (!hasValgrind()) {
  console.log('bench:rpc-instructions skipped: valgrind (with callgrind_control) is not installed')
  process.exit(0)
}
const load = loadavg()[0]!.toFixed(2)
console.log(
  `bench:rpc-instructions — callgrind, ${WARMUP} warm-up + ${CALLS} counted ` +
    `${CACHED ? 'cached eth_chainId' : 'distinct eth_getBalance'}, ` +
    `${IN_FLIGHT} in flight; Halyard request log ${REQUEST_LOG}, storage ${DATABASE ? 'PostgreSQL' : 'PGlite'}; ` +
    `load average ${load}`,
)
const anvil = await startAnvil()
const fmt = (n: number) => Math.round(n).toLocaleString('en')
/** A server's line: per call, then (with BENCH_IDLE_S) the window, the idle rate and the count net of it. */
function report(label: string, c: Counted): Counted {
  console.log(`  ${label} ${fmt(c.total)} instructions per call (main thread ${fmt(c.main)})`)
  if (!c.idle) return c
  const net: Counted = {
    ...c,
    total: c.total - (c.idle.total * c.windowS) / CALLS,
    main: c.main - (c.idle.main * c.windowS) / CALLS,
  }
  console.log(
    `    window ${c.windowS.toFixed(0)} s; idle ${fmt(c.idle.total)} instructions/s (main ${fmt(c.idle.main)}); ` +
      `less the idle rate: ${fmt(net.total)} per call (main thread ${fmt(net.main)})`,
  )
  return net
}
/** A floor server (bench/lib/floor-http.ts) of one process in front of anvil. */
const floorArgs = (kind: FloorKind) => ['--floor', '1', kind, anvil.url]
const FLOOR_SCRIPT = 'bench/lib/floor-http.ts'
const ratio = (label: string, a: Counted, b: Counted) =>
  console.log(`  ${label} ${(a.total / b.total).toFixed(2)}× (main thread ${(a.main / b.main).toFixed(2)}×)`)
/** Every run of one Halyard, less the idle rate where counted; the median of each figure. */
function median(runs: Counted[]): Counted {
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  return { ...runs[0]!, total: mid(runs.map((r) => r.total)), main: mid(runs.map((r) => r.main)) }
}
try {
  const floors: { label: string; net: Counted }[] = []
  if (CACHED) {
    const bare = await measure('bare constant server', FLOOR_SCRIPT, floorArgs('constant'))
    floors.push({ label: 'bare', net: report('bare constant server:  ', bare) })
    const headers = await measure(
      'headers constant server',
      FLOOR_SCRIPT,
      floorArgs('headers-constant'),
      READING_FLOOR_KEY,
    )
    floors.push({ label: 'headers', net: report('headers constant:      ', headers) })
  } else {
    const proxy = await measure('bare Node proxy', FLOOR_SCRIPT, floorArgs('proxy'))
    floors.push({ label: 'bare proxy', net: report('bare node:http → anvil:', proxy) })
  }
  const runs = HALYARDS.map(() => [] as Counted[])
  for (let rep = 1; rep <= REPS; rep++) {
    if (REPS > 1) console.log(`round ${rep} of ${REPS}`)
    for (const [i, h] of HALYARDS.entries()) {
      const counted = await measure(h.name, h.script, ['--server', anvil.url])
      runs[i]!.push(report(`${h.name}:`, counted))
    }
  }
  console.log(IDLE_S > 0 ? 'ratios, counts less the idle rate:' : 'ratios:')
  if (CACHED) ratio('headers / bare:', floors[1]!.net, floors[0]!.net)
  const medians = runs.map(median)
  for (const [i, h] of HALYARDS.entries()) {
    if (runs[i]!.length > 1)
      console.log(
        `  ${h.name}, median of ${runs[i]!.length}: ${fmt(medians[i]!.total)} per call (main thread ` +
          `${fmt(medians[i]!.main)}; runs ${runs[i]!.map((r) => fmt(r.main)).join(', ')})`,
      )
    for (const f of floors) ratio(`${h.name} / ${f.label}:`, medians[i]!, f.net)
    if (i > 0) ratio(`${h.name} / ${HALYARDS[0]!.name}:`, medians[i]!, medians[0]!)
  }
} finally {
  await anvil.stop()
}
