/**
 * npm run bench:bundler — Halyard's bundler against Alto (@pimlico/alto) on one anvil.
 *
 * Setup: anvil (mining on every transaction, 60M gas blocks) with dev mode's ERC-4337
 * contracts. Each row takes the same stream of plain v0.7 ops from fresh, already deployed
 * SimpleAccounts (bench/lib/bundler-load.ts says what is measured). Rows: Halyard unsafe vs Alto
 * unsafe (`--safe-mode false`; Alto's safe mode does not run on anvil), then Halyard with the
 * full ERC-7562 rules (safe) beside them.
 *
 * Halyard is the real server in a child process (this file with `--server`, bench/lib/
 * halyard-child.ts: PGlite in a data dir, as `npm start` runs), its network configured with the
 * bundler, and driven through `POST /v1/bundler/ethereum/devnet` with an API key, as a user
 * would. Alto runs as its own process (installed on first run into .bench-deps/, git-ignored).
 *
 * Halyard unsafe and Alto take BENCH_ROUNDS (2) turns each, alternating, each in one process for
 * all its turns (Alto's and Halyard's JIT warm alike), and the table shows each
 * one's best round (every round is printed): on a shared machine a load spike in one row's
 * window would otherwise decide the ratio.
 *
 * Knobs: BENCH_OPS (200), BENCH_CONCURRENCY (16 requests in flight), BENCH_ROWS (which rows:
 * halyard-unsafe,alto,halyard-safe), BENCH_MAX_EXEC (Halyard's EVM calls in flight on anvil: 1,
 * dev mode's setting; 4 measured slower), BENCH_SIM_DEPLOY (1: EntryPointSimulations deployed once,
 * as Alto deploys its own; 0: sent as a code override with every simulation), BENCH_PROFILE=1 (Halyard's CPU profile during each
 * row's accept phase: top functions and packages).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ANVIL_EXECUTOR_KEYS } from '../src/bundler/executor.ts'
import type { NetworkConfigInput } from '../src/config/file.ts'
import { ensureAccountAbstraction } from '../src/devnet/account-abstraction.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import type { Hex } from '../src/types.ts'
import { startAlto } from './lib/bundler-alto.ts'
import { type LoadSpec, missingRow, type Row, runLoad } from './lib/bundler-load.ts'
import { cpuTop, formatCpuTop, profileFiles } from './lib/cpu-top.ts'
import { type HalyardChild, serveHalyardChild, startHalyardChild } from './lib/halyard-child.ts'

const OPS = Number(process.env.BENCH_OPS ?? 200)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const PROFILE = process.env.BENCH_PROFILE === '1'
/** Which rows run (profiling one row): any of halyard-unsafe, alto, halyard-safe. */
const ROWS = new Set((process.env.BENCH_ROWS ?? 'halyard-unsafe,alto,halyard-safe').split(','))
/** EVM-running node calls Halyard keeps in flight (dev mode's anvil setting: 1). */
const MAX_EXEC = Number(process.env.BENCH_MAX_EXEC ?? 1)
/** BENCH_SIM_DEPLOY=0: Halyard's v0.7 simulations carry the EntryPointSimulations code instead. */
const SIM_DEPLOY = process.env.BENCH_SIM_DEPLOY !== '0'
/** Turns of Halyard unsafe and Alto (the machine is shared: the best of each is kept). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
/** The child's network config (its bundler key and EntryPoints), handed over in the environment. */
const NETWORK_ENV = 'HALYARD_BENCH_BUNDLER_NETWORK'
const URL_PATH = '/bundler/ethereum/devnet'
/** anvil's well-known account 7: Alto's utility key (account 8 is its executor, 9 Halyard's). */
const ANVIL_KEY_7: Hex = '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356'

async function stopChild(h: HalyardChild): Promise<void> {
  const exited = new Promise((r) => h.child.once('exit', r))
  h.child.disconnect()
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
  if (h.child.exitCode === null) h.child.kill('SIGKILL')
}

/**
 * `rounds` loads on one Halyard child, as Alto's one process takes all of its rounds (a process
 * per round would leave Halyard's JIT cold in every round and Alto's warm from the second);
 * `after` takes each round's row (and runs Alto's turn).
 */
async function halyardRounds(
  name: string,
  network: Partial<NetworkConfigInput>,
  load: LoadSpec,
  rounds: number,
  after: (row: Row) => Promise<void> = async () => {},
): Promise<Row[]> {
  process.env[NETWORK_ENV] = JSON.stringify(network)
  const profileDir = PROFILE ? mkdtempSync(path.join(tmpdir(), 'halyard-bench-prof-')) : undefined
  const h = await startHalyardChild(import.meta.filename, load.anvilUrl, profileDir ? { profileDir } : {})
  const rows: Row[] = []
  try {
    for (let round = 0; round < rounds; round++) {
      const row = await runLoad(name, { url: h.url, headers: { 'x-api-key': h.key } }, load)
      rows.push(row)
      await after(row)
    }
    return rows
  } finally {
    await stopChild(h)
    for (const [i, row] of rows.entries())
      if (profileDir && row.acceptWindow) {
        console.log(
          `\n${name}, round ${i + 1}: Halyard child CPU during the accept phase (${profileDir}, window ${row.acceptWindow.from}–${row.acceptWindow.to} µs)`,
        )
        console.log(formatCpuTop(cpuTop(profileFiles(profileDir), row.acceptWindow), 30))
      }
  }
}

async function main() {
  const anvil = await startAnvil({ extraArgs: ['--gas-limit', '60000000'] })
  let alto: { kill(signal: NodeJS.Signals): boolean } | undefined
  try {
    const { config } = await ensureAccountAbstraction(
      anvil.url,
      mkdtempSync(path.join(tmpdir(), 'halyard-bench-aa-')),
    )
    const load: LoadSpec = {
      anvilUrl: anvil.url,
      factory: config.simpleAccountFactory.v07,
      entryPoint: config.entryPoints.v07,
      ops: OPS,
      concurrency: CONCURRENCY,
    }
    // anvil runs EVM calls one at a time: maxConcurrentExecutions 1 is dev mode's setting for it.
    const network = (mode: 'safe' | 'unsafe'): Partial<NetworkConfigInput> => ({
      accountAbstraction: config,
      bundler: {
        mode,
        executorKeys: [ANVIL_EXECUTOR_KEYS[1] as string],
        maxConcurrentExecutions: MAX_EXEC,
        debugMethods: false,
        // As Alto deploys its simulation contracts at start (dev mode's default too).
        deploySimulations: SIM_DEPLOY,
      },
    })
    console.log(
      `bench:bundler — ${OPS} ops from ${OPS} deployed SimpleAccounts v0.7, ${CONCURRENCY} in flight, anvil automine; Halyard over POST /v1${URL_PATH} (child process, PGlite)`,
    )
    const skipped = (name: string) => missingRow(name, 'not run (BENCH_ROWS)')
    // Like for like, in turns: Halyard unsafe, Alto, Halyard unsafe, Alto… on the same anvil; the
    // table keeps each one's best round (by accepted ops/s), every round is printed.
    const best = new Map<string, Row>()
    const rounds: string[] = []
    const keep = (r: Row) => {
      const b = best.get(r.name)
      if (!b || !(b.acceptedPerSec >= r.acceptedPerSec)) best.set(r.name, r)
      rounds.push(`${r.name}: ${r.acceptedPerSec.toFixed(1)} ops/s, p50 ${r.p50.toFixed(0)} ms`)
    }
    let altoUrl: string | undefined
    if (ROWS.has('alto')) {
      const started = await startAlto(anvil.url, [config.entryPoints.v07, config.entryPoints.v06], {
        executor: ANVIL_EXECUTOR_KEYS[0] as Hex,
        utility: ANVIL_KEY_7,
      })
      if (typeof started === 'string') best.set('Alto unsafe', missingRow('Alto unsafe', started))
      else {
        alto = started.child
        altoUrl = started.url
      }
    } else best.set('Alto unsafe', skipped('Alto unsafe'))
    const altoRound = async () => {
      if (altoUrl) keep(await runLoad('Alto unsafe', { url: altoUrl }, load))
    }
    if (ROWS.has('halyard-unsafe'))
      await halyardRounds('Halyard unsafe', network('unsafe'), load, ROUNDS, async (row) => {
        keep(row)
        await altoRound()
      })
    else for (let round = 0; round < ROUNDS; round++) await altoRound()
    alto?.kill('SIGKILL')
    alto = undefined
    if (!ROWS.has('halyard-unsafe')) best.set('Halyard unsafe', skipped('Halyard unsafe'))
    const safe = ROWS.has('halyard-safe')
      ? ((await halyardRounds('Halyard safe (ERC-7562)', network('safe'), load, 1))[0] as Row)
      : skipped('Halyard safe (ERC-7562)')
    const rows = [best.get('Halyard unsafe') as Row, best.get('Alto unsafe') as Row, safe]
    console.log(`\nrounds, in order: ${rounds.join('; ')}`)

    const f = (v: number, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '—')
    console.log('')
    console.log(
      '| row | accepted ops/s | send→receipt p50 ms | p99 ms | used/estimated gas (median, min–max) | landed |',
    )
    console.log('|---|---:|---:|---:|---|---:|')
    for (const r of rows)
      console.log(
        `| ${r.name} | ${f(r.acceptedPerSec, 1)} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.ratioMedian, 3)} (${f(r.ratioMin, 3)}–${f(r.ratioMax, 3)}) | ${r.landed}/${OPS} |`,
      )
    for (const r of rows) if (r.note) console.log(`${r.name}: ${r.note}`)
    const [h, a, s] = rows
    if (h && a && Number.isFinite(a.acceptedPerSec)) {
      console.log(
        `ratios vs Alto unsafe: Halyard unsafe accepted ops/s ${f(h.acceptedPerSec / a.acceptedPerSec, 2)}×, p50 ${f(h.p50 / a.p50, 2)}×; Halyard safe ${f((s?.acceptedPerSec ?? Number.NaN) / a.acceptedPerSec, 2)}×, p50 ${f((s?.p50 ?? Number.NaN) / a.p50, 2)}×`,
      )
      console.log(
        `floor (Halyard unsafe vs Alto unsafe): accepted ops/s ${h.acceptedPerSec >= a.acceptedPerSec ? 'met' : 'NOT met'}, p50 inclusion ${h.p50 <= a.p50 ? 'met' : 'NOT met'}`,
      )
    }
  } finally {
    alto?.kill('SIGKILL')
    await anvil.stop()
  }
}

if (process.argv[2] === '--server') {
  const network = JSON.parse(process.env[NETWORK_ENV] ?? '{}') as Partial<NetworkConfigInput>
  await serveHalyardChild(process.argv[3] ?? '', URL_PATH, network)
} else {
  await main()
  process.exit(0)
}
