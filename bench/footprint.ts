/**
 * npm run bench:footprint — Halyard's start time and memory, beside their floors in
 * the same run.
 *
 * Modes, each a real `node bin/halyard.mjs …` process (what `npm start` and `npx halyard serve`
 * run), timed from spawn to its banner, then /ready polled:
 *   dev cold        `halyard dev` on an empty data dir (every fresh clone's first `npm start`)
 *   dev warm        `halyard dev` again on the same data dir
 *   dev first ever  `halyard dev` with an empty HALYARD_CACHE_DIR too: no PGlite template and no
 *                   compiled contracts yet (once per machine and user; FOOTPRINT_FIRST_EVER=0 skips)
 *   serve embedded  `halyard serve` on PGlite (fresh data dir), against an anvil the bench starts
 *   serve postgres  `halyard serve` on a fresh PostgreSQL database (DATABASE_URL; REDIS_URL when
 *                   set); skipped, and said so, without DATABASE_URL
 * RSS of the Halyard process (anvil apart) FOOTPRINT_SETTLE_S (10) after ready, the peak and
 * final RSS over FOOTPRINT_LOAD_S (60) of wrk on /v1/rpc (eth_getBalance of a new address on
 * every call, FOOTPRINT_CONNECTIONS (16) connections, an enterprise key), then after
 * FOOTPRINT_IDLE_S (60) idle. FOOTPRINT_LOAD_S=10 FOOTPRINT_IDLE_S=10 FOOTPRINT_SETTLE_S=3 is
 * a quick run; FOOTPRINT_MODES=dev (or `dev cold,serve`…) runs only the modes named so.
 * Then the soak (bench/lib/footprint-soak.ts): `serve` embedded held FOOTPRINT_SOAK_S (600) s at
 * the growth plan's request limit with WebSocket clients joining and leaving, RSS and event-loop
 * delay sampled every 10 s and a summary line; FOOTPRINT_SOAK_S=0 skips it, FOOTPRINT_MODES=soak
 * runs only it.
 * Floors: bare node, node + the tsx loader, a bare Node process holding PGlite open with
 * Halyard's settings (src/storage/pglite-settings.ts) on an existing data dir and on a first
 * start with initdb in-process, anvil's own start (bench/lib/footprint-floors.ts).
 * FOOTPRINT_BASELINE=/path/to/another/checkout runs the same modes on that tree too (e.g. the
 * last commit: `git archive HEAD | tar -x -C DIR` plus a node_modules symlink) and prints
 * after/before ratios from this one run (FOOTPRINT_BASELINE_FIRST=1 runs the baseline first).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { sleep } from '../src/common/time.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { PLANS } from '../src/limits/plans.ts'
import { type Floor, measureFloors } from './lib/footprint-floors.ts'
import { loadRpc } from './lib/footprint-load.ts'
import { descendants, rssMb, run, startUntil, stop, waitOk } from './lib/footprint-proc.ts'
import { soak } from './lib/footprint-soak.ts'
import { findWrk } from './lib/wrk.ts'

const seconds = (name: string, dflt: number) => Number(process.env[name] ?? dflt)
const SETTLE_S = seconds('FOOTPRINT_SETTLE_S', 10)
const LOAD_S = seconds('FOOTPRINT_LOAD_S', 60)
const IDLE_S = seconds('FOOTPRINT_IDLE_S', 60)
const CONNECTIONS = seconds('FOOTPRINT_CONNECTIONS', 16)
const SOAK_S = seconds('FOOTPRINT_SOAK_S', 600)
const HERE = path.resolve(import.meta.dirname, '..')
const BASELINE = process.env.FOOTPRINT_BASELINE ? path.resolve(process.env.FOOTPRINT_BASELINE) : undefined
const WRK = findWrk()
// FOOTPRINT_MODES=dev,serve runs only the modes whose name starts with one of these.
const MODES = (process.env.FOOTPRINT_MODES ?? '').split(',').filter(Boolean)
const wanted = (name: string) => MODES.length === 0 || MODES.some((m) => name.startsWith(m))

interface Mode {
  name: string
  args: string[]
  env: NodeJS.ProcessEnv
  readyWhen: RegExp
  /** Targets (docs/benchmarks.md, Footprint). */
  target: { readyS?: number; rssMb: number }
}

interface Result {
  mode: string
  tree: string
  readyMs: number
  rssReady: number
  anvilRss: number | undefined
  load?: { reqPerSec: number; errors: number; peak: number; end: number }
  rssIdle?: number
  target: Mode['target']
}

const DEV_READY = /JSON-RPC:\s+(\S+)/
const SERVE_READY = /Halyard serving \d+ network\(s\) at (\S+)/

async function measureMode(root: string, tree: string, mode: Mode, results: Result[]): Promise<void> {
  if (!wanted(mode.name)) return
  results.push(await measureOne(root, tree, mode))
  print(results.at(-1)!)
}

async function measureOne(root: string, tree: string, mode: Mode): Promise<Result> {
  const bin = path.join(root, 'bin', 'halyard.mjs')
  const env = { ...process.env, HALYARD_PORT: '0', HALYARD_LOG_LEVEL: 'warn', ...mode.env }
  const s = await startUntil(process.execPath, [bin, ...mode.args], { env, readyWhen: mode.readyWhen })
  try {
    const rpcUrl = mode.readyWhen === DEV_READY ? s.match[1]! : `${s.match[1]}/rpc/ethereum/devnet`
    const origin = new URL(rpcUrl).origin
    await waitOk(`${origin}/ready`)
    await sleep(SETTLE_S * 1000)
    const anvil = descendants(s.pid).find((p) => p.comm === 'anvil')
    const result: Result = {
      mode: mode.name,
      tree,
      readyMs: s.readyMs,
      rssReady: rssMb(s.pid) ?? Number.NaN,
      anvilRss: anvil ? rssMb(anvil.pid) : undefined,
      target: mode.target,
    }
    if (!WRK || LOAD_S <= 0) return result
    const key = await loadKey(bin, env)
    const load = await loadRpc({
      wrk: WRK,
      url: rpcUrl,
      key,
      seconds: LOAD_S,
      connections: CONNECTIONS,
      rss: () => rssMb(s.pid),
    })
    result.load = { ...load, peak: load.peakRssMb, end: rssMb(s.pid) ?? Number.NaN }
    await sleep(IDLE_S * 1000)
    result.rssIdle = rssMb(s.pid) ?? Number.NaN
    return result
  } finally {
    await stop(s.child)
  }
}

/** A key through the CLI; enterprise for the load (the dev key's growth plan would answer it with 429). */
async function loadKey(bin: string, env: NodeJS.ProcessEnv, plan = 'enterprise'): Promise<string> {
  const email = `footprint-${plan}@halyard.local`
  try {
    await run(process.execPath, [bin, 'accounts', 'create', '--email', email, '--plan', plan], env)
  } catch {
    // Already there (the warm start reuses the cold start's data dir).
  }
  const out = await run(process.execPath, [bin, 'keys', 'create', '--account', email, '--env', 'test'], env)
  return out.trim().split('\n').at(-1)!.trim()
}

/** A fresh database on the DATABASE_URL server, so `serve` migrates an empty one; dropped after. */
async function freshDatabase(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `halyard_footprint_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const u = new URL(url)
  u.pathname = `/${name}`
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    },
  }
}

async function measureTree(root: string, tree: string, anvilUrl: string, results: Result[]) {
  const dirs: string[] = []
  const fresh = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'halyard-footprint-'))
    dirs.push(d)
    return d
  }
  try {
    const devDir = fresh()
    const dev = { HALYARD_DATA_DIR: devDir, DATABASE_URL: '', REDIS_URL: '', HALYARD_SECRET_KEY: '' }
    for (const name of ['dev cold', 'dev warm']) {
      const target = name === 'dev cold' ? { readyS: 4, rssMb: 500 } : { readyS: 3, rssMb: 500 }
      const mode = { name, args: ['dev'], env: dev, readyWhen: DEV_READY, target }
      await measureMode(root, tree, mode, results)
    }
    if (tree === 'this' && process.env.FOOTPRINT_FIRST_EVER !== '0') {
      // No template and no compile cache yet (HALYARD_CACHE_DIR empty): once per machine and user.
      const env = { ...dev, HALYARD_DATA_DIR: fresh(), HALYARD_CACHE_DIR: fresh() }
      const mode = {
        name: 'dev first ever',
        args: ['dev'],
        env,
        readyWhen: DEV_READY,
        target: { rssMb: 500 },
      }
      await measureMode(root, tree, mode, results)
    }
    const configDir = fresh()
    const config = path.join(configDir, 'halyard.yaml')
    writeFileSync(config, serveConfig(anvilUrl))
    const serve = {
      HALYARD_SECRET_KEY: randomBytes(32).toString('hex'),
      HALYARD_PUBLIC_URL: 'https://halyard.example.com',
      REDIS_URL: '',
      DATABASE_URL: '',
    }
    const embedded = { name: 'serve embedded', args: ['serve', '--config', config], readyWhen: SERVE_READY }
    const embeddedEnv = { ...serve, HALYARD_DATA_DIR: fresh() }
    await measureMode(root, tree, { ...embedded, env: embeddedEnv, target: { rssMb: 550 } }, results)
    if (!wanted('serve postgres')) return
    if (!process.env.DATABASE_URL) {
      console.log(`  [${tree}] serve postgres: skipped (DATABASE_URL is not set)`)
      return
    }
    let db: Awaited<ReturnType<typeof freshDatabase>>
    try {
      db = await freshDatabase(process.env.DATABASE_URL)
    } catch (err) {
      console.log(`  [${tree}] serve postgres: skipped (DATABASE_URL unreachable: ${(err as Error).message})`)
      return
    }
    try {
      const env = {
        ...serve,
        HALYARD_DATA_DIR: fresh(),
        DATABASE_URL: db.url,
        REDIS_URL: process.env.REDIS_URL ?? '',
      }
      const mode = { ...embedded, name: 'serve postgres', env, target: { rssMb: 150 } }
      await measureMode(root, tree, mode, results)
    } finally {
      await db.drop()
    }
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
}

const serveConfig = (anvilUrl: string) =>
  `networks:\n  - chain: ethereum\n    network: devnet\n    chainId: 31337\n    blockTimeMs: 1000\n    upstreams:\n      - url: ${anvilUrl}\n`

const mb = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '—' : `${Math.round(n)} MB`)
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`

function print(r: Result) {
  const load = r.load
    ? `load ${Math.round(r.load.reqPerSec)} req/s (${r.load.errors} errors), peak ${mb(r.load.peak)}, end ${mb(r.load.end)}; idle ${mb(r.rssIdle)}`
    : 'no load (wrk missing or FOOTPRINT_LOAD_S=0)'
  console.log(
    `  [${r.tree}] ${r.mode}: ready ${sec(r.readyMs)}, RSS ${mb(r.rssReady)} (anvil ${mb(r.anvilRss)}); ${load}`,
  )
}

function table(results: Result[], floors: Floor[]) {
  const floor = (prefix: string) => floors.find((f) => f.name.startsWith(prefix))!
  const node = floor('bare node')
  const pglite = floor('node + PGlite open')
  const anvil = floor('anvil')
  const floorOf = (mode: string) =>
    mode.startsWith('dev')
      ? { readyMs: pglite.readyMs + anvil.readyMs, rssMb: pglite.rssMb, name: 'PGlite open + anvil start' }
      : mode === 'serve embedded'
        ? { ...pglite, name: 'PGlite open' }
        : { ...node, name: 'bare node' }
  console.log('\nfloors (same run):')
  for (const f of floors)
    console.log(`  ${f.name.padEnd(64)} ready ${sec(f.readyMs).padStart(7)}  RSS ${mb(f.rssMb)}`)
  console.log(
    '\nmode             tree      ready (floor, ×)          RSS ready (floor, ×)     load peak/end     idle     target',
  )
  for (const r of results) {
    const f = floorOf(r.mode)
    const t = `${r.target.readyS ? `≤ ${r.target.readyS} s, ` : ''}≤ ${r.target.rssMb} MB`
    const ok =
      (r.target.readyS === undefined || r.readyMs <= r.target.readyS * 1000) && r.rssReady <= r.target.rssMb
    console.log(
      [
        r.mode.padEnd(16),
        r.tree.padEnd(9),
        `${sec(r.readyMs)} (${sec(f.readyMs)}, ${(r.readyMs / f.readyMs).toFixed(2)}×)`.padEnd(25),
        `${mb(r.rssReady)} (${mb(f.rssMb)}, ${(r.rssReady / f.rssMb).toFixed(2)}×)`.padEnd(24),
        (r.load ? `${mb(r.load.peak)}/${mb(r.load.end)}` : '—').padEnd(17),
        mb(r.rssIdle).padEnd(8),
        `${t} ${ok ? 'met' : 'NOT met'}`,
      ].join(' '),
    )
  }
  if (!BASELINE) return
  console.log('\nafter/before (same run):')
  for (const a of results.filter((r) => r.tree === 'this')) {
    const b = results.find((r) => r.tree === 'baseline' && r.mode === a.mode)
    if (!b) continue
    const x = (p: number | undefined, q: number | undefined) =>
      p === undefined || q === undefined ? '—' : `${(p / q).toFixed(2)}×`
    console.log(
      `  ${a.mode.padEnd(16)} ready ${sec(b.readyMs)} → ${sec(a.readyMs)} (${x(a.readyMs, b.readyMs)}), RSS ${mb(b.rssReady)} → ${mb(a.rssReady)} (${x(a.rssReady, b.rssReady)}), idle ${mb(b.rssIdle)} → ${mb(a.rssIdle)} (${x(a.rssIdle, b.rssIdle)})`,
    )
  }
}

/** The soak (bench/lib/footprint-soak.ts) on `serve` with embedded storage, at the growth plan's limit. */
async function runSoak(anvilUrl: string) {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-footprint-soak-'))
  try {
    const config = path.join(dir, 'halyard.yaml')
    writeFileSync(config, serveConfig(anvilUrl))
    const env = {
      ...process.env,
      HALYARD_PORT: '0',
      HALYARD_LOG_LEVEL: 'warn',
      HALYARD_SECRET_KEY: randomBytes(32).toString('hex'),
      HALYARD_PUBLIC_URL: 'https://halyard.example.com',
      HALYARD_DATA_DIR: path.join(dir, 'data'),
      DATABASE_URL: '',
      REDIS_URL: '',
    }
    const bin = path.join(HERE, 'bin', 'halyard.mjs')
    const s = await startUntil(process.execPath, [bin, 'serve', '--config', config], {
      env,
      readyWhen: SERVE_READY,
    })
    try {
      const base = s.match[1]!
      const origin = new URL(base).origin
      await waitOk(`${origin}/ready`)
      const key = await loadKey(bin, env, 'growth')
      const perSecond = PLANS.growth.requestsPerSecond
      console.log(
        `\nsoak: ${SOAK_S} s of serve (embedded) at the growth plan's ${perSecond} req/s, WebSocket clients joining and leaving`,
      )
      const r = await soak({
        pid: s.pid,
        origin,
        rpcUrl: `${base}/rpc/ethereum/devnet`,
        wsUrl: `${base.replace(/^http/, 'ws')}/ws/ethereum/devnet?apiKey=${key}`,
        key,
        perSecond,
        seconds: SOAK_S,
        log: (line) => console.log(line),
      })
      const rssOk = r.growth <= 1.1
      const loopOk = r.worstLoopP99Ms < 20
      console.log(
        `soak summary: RSS ${Math.round(r.rssAfterFirstMinute)} MB after the first minute → ${Math.round(r.rssEnd)} MB at the end (${r.growth.toFixed(2)}×, ${rssOk ? 'did not grow: within 10%' : 'GREW more than 10%'}); event-loop delay p99 per 10 s window: median ${r.medianLoopP99Ms.toFixed(1)} ms, worst ${r.worstLoopP99Ms.toFixed(1)} ms (${loopOk ? 'under 20 ms' : 'NOT under 20 ms'}); ${r.wsConnected} WebSocket clients connected, ${r.wsFailed} failed`,
      )
    } finally {
      await stop(s.child)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main() {
  console.log(
    `footprint: settle ${SETTLE_S} s, load ${LOAD_S} s (${WRK ? `wrk, ${CONNECTIONS} connections` : 'no wrk: skipped'}), idle ${IDLE_S} s; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
  const floors = await measureFloors(SETTLE_S * 1000)
  const anvil = await startAnvil({ chainId: 31337, blockTime: 1 })
  const results: Result[] = []
  try {
    // FOOTPRINT_BASELINE_FIRST=1 swaps the order, to see whether a machine getting busier or
    // quieter during the run favours one tree.
    const trees: [string, string][] = [[HERE, 'this']]
    if (BASELINE) trees.push([BASELINE, 'baseline'])
    if (process.env.FOOTPRINT_BASELINE_FIRST === '1') trees.reverse()
    for (const [root, tree] of trees) await measureTree(root, tree, anvil.url, results)
    if (SOAK_S > 0 && wanted('soak')) await runSoak(anvil.url)
  } finally {
    await anvil.stop()
  }
  table(results, floors)
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
}

await main()
