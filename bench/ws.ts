/**
 * npm run bench:ws — WebSocket newHeads fan-out, loopback only, bounded in time.
 *
 * Three kinds of process, so no two of them share an event loop: this driver (anvil, mining,
 * bookkeeping), Halyard in a child process (`--server`, PostgreSQL in a scratch schema when
 * DATABASE_URL is set, else PGlite, whose WASM heap alone is ~700 MiB of RSS), and the clients
 * spread over BENCH_CLIENT_PROCS child processes (`--clients`). For each client count every
 * client subscribes to newHeads, then the driver mines BLOCKS blocks at BLOCKS_PER_SECOND with
 * evm_mine. Times are `performance.timeOrigin + performance.now()` in every process (the same
 * wall clock, sub-millisecond). Reported:
 *   - push latency p50/p99 from Halyard receiving the head from upstream to the client receiving
 *     it (the issue's measure), and end to end from sending evm_mine;
 *   - Halyard's fan-out loop per block: wall time and its CPU time;
 *   - peak RSS of the Halyard process (nothing else runs in it);
 *   - the clients' own overhead: the worst event-loop delay p99 of the client processes (a
 *     receipt time is late by up to that much) and their CPU share;
 *   - the floor: the same clients fed by the least code that fans a head out from one Node
 *     process (ws-floor.ts), measured the same way: what this machine allows one event loop;
 *   - baseline in the same run: the same clients subscribed to anvil directly (as many as anvil
 *     sustains: connections anvil refuses are counted), end to end from sending evm_mine.
 * On a 2-core machine the client processes and Halyard share the cores: the figures include
 * that contention, which a remote client fleet would not add.
 * Env: BENCH_CLIENTS (default "1000,10000"), BENCH_BLOCKS (20), BENCH_BPS (4),
 * BENCH_CLIENT_PROCS (4), DATABASE_URL, BENCH_BASELINE=0 (skip the anvil-direct rows),
 * BENCH_FLOOR=0 (skip the minimal fan-out rows),
 * BENCH_SERVER_ARGS (extra node flags for the Halyard child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { loadEnv } from '../src/config/env.ts'
import { networkSchema } from '../src/config/file.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { startHalyard } from '../src/server/runtime.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'
import { clientsMain, type ToDriver } from './ws-clients.ts'
import { type FromServer, floorMain, serveStats, type ToServer } from './ws-floor.ts'

const COUNTS = (process.env.BENCH_CLIENTS ?? '1000,10000').split(',').map(Number)
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 20)
const BLOCKS_PER_SECOND = Number(process.env.BENCH_BPS ?? 4)
const CLIENT_PROCS = Math.max(1, Number(process.env.BENCH_CLIENT_PROCS ?? 4))
/** The whole bench is killed after this long, whatever happens. */
const HARD_LIMIT_MS = 10 * 60_000

const now = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------- Halyard process

async function serverMain(anvilUrl: string, anvilWsUrl: string, chainId: number) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-ws-'))
  const dbUrl = process.env.DATABASE_URL
  const schema = `bench_ws_${randomBytes(4).toString('hex')}`
  const storage: Storage | undefined = dbUrl
    ? await openStorage({ databaseUrl: dbUrl, schema, poolSize: 4 })
    : undefined
  const halyard = await startHalyard({
    storage,
    env: loadEnv({ HALYARD_LOG_LEVEL: 'warn', HALYARD_DATA_DIR: dataDir }),
    networks: [
      networkSchema.parse({
        chain: 'ethereum',
        network: 'devnet',
        chainId,
        blockTimeMs: 1000,
        indexer: { enabled: false },
        upstreams: [{ url: anvilUrl, ws: anvilWsUrl }],
      }),
    ],
    secretKey: Buffer.alloc(32, 7),
    port: 0,
    host: '127.0.0.1',
  })
  await halyard.ctx.auth.createAccount('bench@ws.local', 'enterprise')
  const key = (await halyard.ctx.auth.createKey({ accountEmail: 'bench@ws.local', env: 'live' })).key
  const received = new Map<number, number>()
  const fannedOut = new Map<number, number>()
  const fanOutCpu = new Map<number, number>()
  const streams = halyard.services.ws.streamsFor(halyard.ctx.networks.get('ethereum', 'devnet'))
  streams.onHeadReceived = (n, at) => {
    if (!received.has(Number(n))) received.set(Number(n), at)
  }
  streams.onHeadFannedOut = (n, at, cpuMs) => {
    if (!fannedOut.has(Number(n))) fannedOut.set(Number(n), at)
    if (!fanOutCpu.has(Number(n))) fanOutCpu.set(Number(n), cpuMs)
  }
  serveStats({
    url: `${halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`,
    connections: () => halyard.services.ws.connectionCount(),
    received,
    fannedOut,
    fanOutCpu,
    stop: async () => {
      await halyard.close()
      rmSync(dataDir, { recursive: true, force: true })
      if (storage && dbUrl) {
        await storage.close()
        const client = new pg.Client({ connectionString: dbUrl })
        await client.connect()
        await client.query(`drop schema if exists ${schema} cascade`)
        await client.end()
      }
    },
  })
}

class ServerChild {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly idleRssMiB: number,
  ) {}

  /** `args`: `--server …` (Halyard) or `--floor …` (the minimal fan-out, ws-floor.ts). */
  static async start(args: string[]): Promise<ServerChild> {
    const extra = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean)
    const child = fork(process.argv[1]!, args, {
      execArgv: [...extra, '--import', 'tsx'],
      stdio: 'inherit',
    })
    const hello = await new Promise<FromServer>((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`${args[0]} child exited with ${code} before listening`)))
    })
    if (hello.type !== 'listening') throw new Error(`unexpected first message from the ${args[0]} child`)
    child.removeAllListeners('exit')
    return new ServerChild(child, hello.url, hello.idleRssMiB)
  }

  ask<T extends FromServer['type']>(type: T & ToServer['type']): Promise<Extract<FromServer, { type: T }>> {
    return new Promise((resolve) => {
      const on = (m: FromServer) => {
        if (m.type !== type) return
        this.child.off('message', on)
        resolve(m as Extract<FromServer, { type: T }>)
      }
      this.child.on('message', on)
      this.child.send({ type } satisfies ToServer)
    })
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.child.once('exit', r))
    this.child.send({ type: 'stop' } satisfies ToServer)
    await exited
  }
}

// ---------------------------------------------------------------- driver

interface Phase {
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
  peakRssMiB?: number
  /** Worst client process: event-loop delay p99 (ms) and CPU use (% of one core). */
  clientLoopDelayP99: number
  clientCpuPercent: number
}

const pct = (sorted: Float64Array, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

function percentiles(values: number[]) {
  const a = Float64Array.from(values).sort()
  return { p50: pct(a, 50), p99: pct(a, 99) }
}

interface Clients {
  children: ChildProcess[]
  /** Settled when every child has exited (listened to from the fork on: an exit is never missed). */
  exited: Promise<unknown>
  connected: number
  failed: number
}

/** Forks the client processes one after the other (each opens its share of the clients). */
async function startClients(url: string, count: number): Promise<Clients> {
  const out: Clients = { children: [], exited: Promise.resolve(), connected: 0, failed: 0 }
  const exits: Promise<unknown>[] = []
  const procs = Math.min(CLIENT_PROCS, count)
  for (let i = 0; i < procs; i++) {
    const share = Math.floor(count / procs) + (i < count % procs ? 1 : 0)
    const child = fork(process.argv[1]!, ['--clients', url, String(share)], {
      execArgv: ['--import', 'tsx', '--max-old-space-size=4096'],
      stdio: 'inherit',
    })
    exits.push(new Promise((r) => child.once('exit', r)))
    out.exited = Promise.all(exits)
    const early = (code: number | null) => {
      throw new Error(`client process exited with ${code} before its clients were connected`)
    }
    child.once('exit', early)
    const ready = await new Promise<Extract<ToDriver, { type: 'ready' }>>((resolve) => {
      child.on('message', (m: ToDriver) => {
        if (m.type === 'ready') resolve(m)
      })
    })
    child.off('exit', early)
    out.children.push(child)
    out.connected += ready.connected
    out.failed += ready.failed
  }
  return out
}

async function rpc(url: string, method: string, params: unknown[] = []) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await res.json()) as { result: unknown }).result
}

async function runPhase(opts: {
  name: string
  url: string
  clients: number
  anvilUrl: string
  server?: ServerChild
}): Promise<Phase> {
  const clients = await startClients(opts.url, opts.clients)
  // Drop the RSS peak of the connection phase: what is measured is the steady fan-out.
  if (opts.server) await opts.server.ask('stats')
  for (const c of clients.children) c.send({ type: 'start' })
  const mineSent = new Map<number, number>()
  const first = Number(await rpc(opts.anvilUrl, 'eth_blockNumber')) + 1
  const started = now()
  for (let i = 0; i < BLOCKS; i++) {
    const t0 = now()
    mineSent.set(first + i, t0)
    await rpc(opts.anvilUrl, 'evm_mine')
    const wait = t0 + 1000 / BLOCKS_PER_SECOND - now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  }
  await new Promise((r) => setTimeout(r, 1500))
  const elapsed = now() - started
  const stats = opts.server ? await opts.server.ask('stats') : undefined
  const results = await Promise.all(
    clients.children.map(
      (child) =>
        new Promise<Extract<ToDriver, { type: 'done' }>>((resolve) => {
          child.on('message', (m: ToDriver) => {
            if (m.type === 'done') resolve(m)
          })
          child.send({ type: 'finish' })
        }),
    ),
  )
  await clients.exited

  const halyardReceived = new Map(stats?.received)
  const halyardFannedOut = new Map(stats?.fannedOut)
  const halyardFanOutCpu = new Map(stats?.fanOutCpu)
  const fanOut: number[] = []
  const fanOutCpu: number[] = []
  for (const n of mineSent.keys()) {
    const a = halyardReceived.get(n)
    const b = halyardFannedOut.get(n)
    if (a !== undefined && b !== undefined) fanOut.push(b - a)
    const c = halyardFanOutCpu.get(n)
    if (c !== undefined) fanOutCpu.push(c)
  }
  const fromHalyard: number[] = []
  const endToEnd: number[] = []
  let delivered = 0
  for (const r of results) {
    for (const [num, times] of Object.entries(r.received)) {
      const n = Number(num)
      const sent = mineSent.get(n)
      if (sent === undefined) continue
      delivered += times.length
      const h = halyardReceived.get(n)
      for (const t of times) {
        endToEnd.push(t - sent)
        if (h !== undefined) fromHalyard.push(t - h)
      }
    }
  }
  return {
    name: opts.name,
    clients: opts.clients,
    connected: clients.connected,
    failed: clients.failed,
    fromHalyard: stats ? percentiles(fromHalyard) : undefined,
    fanOut: stats ? percentiles(fanOut) : undefined,
    fanOutCpu: stats ? percentiles(fanOutCpu) : undefined,
    endToEnd: percentiles(endToEnd),
    delivered,
    expected: clients.connected * BLOCKS,
    peakRssMiB: stats?.peakRssMiB,
    clientLoopDelayP99: Math.max(...results.map((r) => r.loopDelayP99)),
    clientCpuPercent: Math.max(...results.map((r) => (100 * r.cpuMs) / elapsed)),
  }
}

async function main() {
  const hardStop = setTimeout(() => {
    console.error(`bench:ws exceeded ${HARD_LIMIT_MS / 60_000} minutes; stopping`)
    process.exit(2)
  }, HARD_LIMIT_MS)
  hardStop.unref()
  const anvil = await startAnvil()
  const phases: Phase[] = []
  let server: ServerChild | undefined
  let floor: ServerChild | undefined
  try {
    server = await ServerChild.start(['--server', anvil.url, anvil.wsUrl, String(anvil.chainId)])
    if (process.env.BENCH_FLOOR !== '0') floor = await ServerChild.start(['--floor', anvil.wsUrl])
    console.log(
      `bench:ws — ${BLOCKS} blocks at ${BLOCKS_PER_SECOND}/s per phase; clients in ${CLIENT_PROCS} processes`,
    )
    for (const n of COUNTS) {
      console.log(`  Halyard, ${n} clients …`)
      phases.push(
        await runPhase({ name: 'Halyard', url: server.url, clients: n, anvilUrl: anvil.url, server }),
      )
      await waitForNoConnections(server)
      if (floor) {
        console.log(`  minimal fan-out (ws-floor.ts), ${n} clients …`)
        phases.push(
          await runPhase({ name: 'floor', url: floor.url, clients: n, anvilUrl: anvil.url, server: floor }),
        )
        await waitForNoConnections(floor)
      }
      if (process.env.BENCH_BASELINE === '0') continue
      console.log(`  anvil directly, ${n} clients …`)
      phases.push(await runPhase({ name: 'anvil direct', url: anvil.wsUrl, clients: n, anvilUrl: anvil.url }))
    }
  } finally {
    await server?.stop()
    await floor?.stop()
    await anvil.stop()
  }
  console.log(
    `storage: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite (in-process)'}; Halyard idle RSS ${server?.idleRssMiB.toFixed(0)} MiB`,
  )
  report(phases)
}

async function waitForNoConnections(server: ServerChild) {
  for (let i = 0; i < 200 && (await server.ask('connections')).count > 0; i++) {
    await new Promise((r) => setTimeout(r, 50))
  }
}

const f = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(1))
const pair = (v: { p50: number; p99: number } | undefined) => (v ? `${f(v.p50)} / ${f(v.p99)}` : '—')

function report(phases: Phase[]) {
  console.log('')
  console.log(
    '| path | clients (connected) | delivered | p50 / p99 from server receipt (ms) | p50 / p99 from evm_mine (ms) | fan-out loop p50 / p99 (ms) | fan-out CPU p50 / p99 (ms) | server peak RSS (MiB) | client loop delay p99 (ms) / CPU |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const p of phases) {
    console.log(
      `| ${p.name} | ${p.clients} (${p.connected}${p.failed ? `, ${p.failed} refused` : ''}) | ${p.delivered}/${p.expected} | ${pair(p.fromHalyard)} | ${pair(p.endToEnd)} | ${pair(p.fanOut)} | ${pair(p.fanOutCpu)} | ${p.peakRssMiB === undefined ? '—' : p.peakRssMiB.toFixed(0)} | ${f(p.clientLoopDelayP99)} / ${p.clientCpuPercent.toFixed(0)}% |`,
    )
  }
  console.log('')
  for (const n of COUNTS) {
    const hal = phases.find((p) => p.name === 'Halyard' && p.clients === n)
    const base = phases.find((p) => p.name === 'anvil direct' && p.clients === n)
    if (hal && base && base.connected > 0) {
      console.log(
        `${n} clients: Halyard end-to-end p99 / anvil-direct p99 = ${(hal.endToEnd.p99 / base.endToEnd.p99).toFixed(2)}×`,
      )
    }
  }
  const big = phases.find((p) => p.name === 'Halyard' && p.clients === Math.max(...COUNTS))
  if (big?.fromHalyard) {
    const ok = big.fromHalyard.p99 < 100 && (big.peakRssMiB ?? 0) < 1024
    console.log(
      `target (${big.clients} clients: p99 < 100 ms, RSS < 1 GiB): p99 ${f(big.fromHalyard.p99)} ms, RSS ${big.peakRssMiB?.toFixed(0)} MiB — ${ok ? 'met' : 'NOT met'}`,
    )
  }
}

if (process.argv[2] === '--clients') {
  void clientsMain(process.argv[3]!, Number(process.argv[4]))
} else if (process.argv[2] === '--floor') {
  floorMain(process.argv[3]!).catch((err) => {
    console.error(err)
    process.exit(1)
  })
} else if (process.argv[2] === '--server') {
  serverMain(process.argv[3]!, process.argv[4]!, Number(process.argv[5])).catch((err) => {
    console.error(err)
    process.exit(1)
  })
} else {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
