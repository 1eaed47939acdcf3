/**
 * npm run bench:rpc-instructions — user-space instructions per distinct JSON-RPC call, counted by
 * valgrind's callgrind: Halyard against the bare Node proxy (bench/lib/floor-http.ts), each a
 * server in its own process in front of one anvil. Unlike req/s and CPU time, an instruction count
 * does not move with what else the machine runs, so a change to the gateway's hot path can be
 * compared across runs and across a loaded machine (docs/benchmarks.md).
 *
 * Each server runs under `valgrind --tool=callgrind --instr-atstart=no`, gets BENCH_WARMUP
 * (3000) distinct eth_getBalance calls, 10 in flight, with counting off (the JIT settles), then
 * BENCH_CALLS (2000) with counting on (`callgrind_control -i on/off`), and the count is dumped.
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
import { DATABASE_ENV } from './lib/halyard-child.ts'

const WARMUP = Number(process.env.BENCH_WARMUP ?? 3000)
const CALLS = Number(process.env.BENCH_CALLS ?? 2000)
const IN_FLIGHT = 10
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
async function startCounted(args: string[], dir: string): Promise<{ child: ChildProcess; hello: Hello }> {
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
      '--import',
      'tsx',
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

/** `calls` distinct eth_getBalance calls, IN_FLIGHT at a time over keep-alive; how many failed. */
function distinctCalls(hello: Hello, calls: number, offset: number): Promise<number> {
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
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBalance',
        params: [address, 'latest'],
      })
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
async function measure(name: string, args: string[]): Promise<Counted> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-ir-'))
  const { child, hello } = await startCounted(args, dir)
  try {
    const pid = String(child.pid)
    const warmFailed = await distinctCalls(hello, WARMUP, 0)
    execFileSync('callgrind_control', ['-i', 'on', pid], { stdio: 'ignore' })
    const started = performance.now()
    const failed = await distinctCalls(hello, CALLS, WARMUP)
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
  `bench:rpc-instructions — callgrind, ${WARMUP} warm-up + ${CALLS} counted distinct eth_getBalance, ` +
    `${IN_FLIGHT} in flight; Halyard request log ${REQUEST_LOG}, storage ${DATABASE ? 'PostgreSQL' : 'PGlite'}; ` +
    `load average ${load}`,
)
const anvil = await startAnvil()
const fmt = (n: number) => Math.round(n).toLocaleString('en')
/** A server's line: per call, then (with BENCH_IDLE_S) the window, the idle rate and the count net of it. */
function report(label: string, c: Counted): { total: number; main: number } {
  console.log(`  ${label} ${fmt(c.total)} instructions per call (main thread ${fmt(c.main)})`)
  if (!c.idle) return c
  const net = {
    total: c.total - (c.idle.total * c.windowS) / CALLS,
    main: c.main - (c.idle.main * c.windowS) / CALLS,
  }
  console.log(
    `    window ${c.windowS.toFixed(0)} s; idle ${fmt(c.idle.total)} instructions/s (main ${fmt(c.idle.main)}); ` +
      `less the idle rate: ${fmt(net.total)} per call (main thread ${fmt(net.main)})`,
  )
  return net
}
try {
  const floor = await measure('bare Node proxy', ['bench/lib/floor-http.ts', '--floor', '1', anvil.url])
  const floorNet = report('bare node:http → anvil:', floor)
  const halyard = await measure('Halyard', ['bench/rpc.ts', '--server', anvil.url])
  const halyardNet = report('Halyard /v1/rpc:       ', halyard)
  console.log(
    `  Halyard / bare proxy:   ${(halyard.total / floor.total).toFixed(2)}× (main thread ${(halyard.main / floor.main).toFixed(2)}×)`,
  )
  if (floor.idle && halyard.idle)
    console.log(
      `  less the idle rate:     ${(halyardNet.total / floorNet.total).toFixed(2)}× (main thread ${(halyardNet.main / floorNet.main).toFixed(2)}×)`,
    )
} finally {
  await anvil.stop()
}
