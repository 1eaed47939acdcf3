/**
 * npm run bench:ws — WebSocket newHeads fan-out, loopback only, bounded in time.
 *
 * Three kinds of process, so no two of them share an event loop: this driver (anvil, mining,
 * bookkeeping), Halyard in a child process (`--server`, lib/ws-server.ts; PostgreSQL in a scratch
 * schema when DATABASE_URL is set, else PGlite, whose WASM heap alone is ~700 MiB of RSS), and the clients
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
 *     sustains: connections anvil refuses are counted), end to end from sending evm_mine;
 *   - Halyard × N workers (ws-cluster.ts): `halyard serve` with HALYARD_WORKERS on PostgreSQL +
 *     Redis; node:cluster spreads the connections over the workers. Each worker has its own
 *     upstream newHeads subscription and receives every head at its own time, so each client's
 *     latency is measured from the receipt of the worker holding its connection (matched by the
 *     client's local port). Its upstream is a counting relay in front of anvil (test/fixtures/ws/test-relay.ts),
 *     which shows how many newHeads subscriptions the upstream saw per phase (one per worker);
 *     the relay adds one loopback hop to the end-to-end figure only.
 * Every row also checks that every client got every mined head exactly once.
 * On a 2-core machine the client processes and Halyard share the cores: the figures include
 * that contention, which a remote client fleet would not add.
 * Env: BENCH_CLIENTS (default "1000,10000"), BENCH_BLOCKS (20), BENCH_BPS (4),
 * BENCH_CLIENT_PROCS (4), DATABASE_URL, BENCH_BASELINE=0 (skip the anvil-direct rows),
 * BENCH_FLOOR=0 (skip the minimal fan-out rows), BENCH_WORKERS (2; 0 skips the cluster rows, which
 * also need DATABASE_URL and REDIS_URL),
 * BENCH_SERVER_ARGS (extra node flags for the Halyard child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
 */

import { startAnvil } from '../src/devnet/anvil.ts'
import { TestWsRelay } from '../test/fixtures/ws/test-relay.ts'
import { type Phase, percentiles, report } from './lib/ws-report.ts'
import { serverMain } from './lib/ws-server.ts'
import { clientsMain, type FromDriver, type ToDriver, UNMAPPED } from './ws-clients.ts'
import { clusterMain } from './ws-cluster.ts'
import { floorMain } from './ws-floor.ts'
import { ServerChild, startClients } from './ws-procs.ts'

const COUNTS = (process.env.BENCH_CLIENTS ?? '1000,10000').split(',').map(Number)
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 20)
const BLOCKS_PER_SECOND = Number(process.env.BENCH_BPS ?? 4)
const CLIENT_PROCS = Math.max(1, Number(process.env.BENCH_CLIENT_PROCS ?? 4))
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2)
/** The whole bench is killed after this long, whatever happens. */
const HARD_LIMIT_MS = 10 * 60_000

const now = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------- driver

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
  relay?: TestWsRelay
}): Promise<Phase> {
  const subscribesBefore = opts.relay?.count('newHeads') ?? 0
  const clients = await startClients(opts.url, opts.clients, CLIENT_PROCS)
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
  const workerOfPort: Record<number, number> = {}
  for (const w of stats?.workers ?? []) for (const p of w.ports) workerOfPort[p] = w.index
  const finish: FromDriver = {
    type: 'finish',
    firstBlock: first,
    blocks: BLOCKS,
    ...(stats?.workers ? { workerOfPort } : {}),
  }
  const results = await Promise.all(
    clients.children.map(
      (child) =>
        new Promise<Extract<ToDriver, { type: 'done' }>>((resolve) => {
          child.on('message', (m: ToDriver) => {
            if (m.type === 'done') resolve(m)
          })
          child.send(finish)
        }),
    ),
  )
  await clients.exited

  // One part per server process (a single process is part 0): each its own receipt times.
  const parts = stats?.workers ?? (stats ? [{ index: 0, ...stats }] : [])
  const receivedBy = new Map(parts.map((w) => [w.index, new Map(w.received)]))
  const fanOut: number[] = []
  const fanOutCpu: number[] = []
  for (const w of parts) {
    const received = new Map(w.received)
    const fannedOut = new Map(w.fannedOut)
    const cpu = new Map(w.fanOutCpu)
    for (const n of mineSent.keys()) {
      const a = received.get(n)
      const b = fannedOut.get(n)
      if (a !== undefined && b !== undefined) fanOut.push(b - a)
      const c = cpu.get(n)
      if (c !== undefined) fanOutCpu.push(c)
    }
  }
  const fromHalyard: number[] = []
  const endToEnd: number[] = []
  let delivered = 0
  for (const r of results) {
    for (const [group, byHead] of Object.entries(r.received)) {
      const halyardReceived = receivedBy.get(Number(group))
      for (const [num, times] of Object.entries(byHead)) {
        const n = Number(num)
        const sent = mineSent.get(n)
        if (sent === undefined) continue
        delivered += times.length
        const h = halyardReceived?.get(n)
        for (const t of times) {
          endToEnd.push(t - sent)
          if (h !== undefined) fromHalyard.push(t - h)
        }
      }
    }
  }
  const sum = (f: (r: Extract<ToDriver, { type: 'done' }>) => number) => results.reduce((a, r) => a + f(r), 0)
  const clientsIn = (group: number) => sum((r) => r.clientsBy[group] ?? 0)
  const cluster = stats?.workers
    ? {
        clientsPerWorker: stats.workers.map((w) => clientsIn(w.index)),
        unmapped: clientsIn(UNMAPPED),
        upstreamNewHeads: (opts.relay?.count('newHeads') ?? 0) - subscribesBefore,
      }
    : {}
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
    exactlyOnce: sum((r) => r.exactlyOnce),
    missing: sum((r) => r.missing),
    duplicates: sum((r) => r.duplicates),
    ...cluster,
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
  let clustered: ServerChild | undefined
  let relay: TestWsRelay | undefined
  let clusterNote: string | undefined
  const clusterName = `Halyard × ${WORKERS} workers`
  try {
    server = await ServerChild.start(['--server', anvil.url, anvil.wsUrl, String(anvil.chainId)])
    if (process.env.BENCH_FLOOR !== '0') floor = await ServerChild.start(['--floor', anvil.wsUrl])
    if (WORKERS > 0 && process.env.DATABASE_URL && process.env.REDIS_URL) {
      relay = await TestWsRelay.start(anvil.wsUrl)
      const args = [anvil.url, relay.url, String(anvil.chainId), String(WORKERS)]
      clustered = await ServerChild.start(['--cluster', ...args])
    } else if (WORKERS > 0) {
      clusterNote = `${clusterName} rows skipped: they need DATABASE_URL and REDIS_URL`
    }
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
      if (clustered) {
        console.log(`  ${clusterName}, ${n} clients …`)
        phases.push(
          await runPhase({
            name: clusterName,
            url: clustered.url,
            clients: n,
            anvilUrl: anvil.url,
            server: clustered,
            relay,
          }),
        )
        await waitForNoConnections(clustered)
      }
      if (process.env.BENCH_BASELINE === '0') continue
      console.log(`  anvil directly, ${n} clients …`)
      phases.push(await runPhase({ name: 'anvil direct', url: anvil.wsUrl, clients: n, anvilUrl: anvil.url }))
    }
  } finally {
    await server?.stop()
    await floor?.stop()
    await clustered?.stop()
    await relay?.close()
    await anvil.stop()
  }
  console.log(
    `storage: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite (in-process)'}; Halyard idle RSS ${server?.idleRssMiB.toFixed(0)} MiB${clustered ? `; ${clusterName} idle RSS ${clustered.idleRssMiB.toFixed(0)} MiB (sum of the workers)` : ''}`,
  )
  report(phases, clusterNote, COUNTS)
}

async function waitForNoConnections(server: ServerChild) {
  for (let i = 0; i < 200 && (await server.ask('connections')).count > 0; i++) {
    await new Promise((r) => setTimeout(r, 50))
  }
}

if (process.argv[2] === '--clients') {
  void clientsMain(process.argv[3]!, Number(process.argv[4]))
} else if (process.argv[2] === '--floor') {
  floorMain(process.argv[3]!).catch((err) => {
    console.error(err)
    process.exit(1)
  })
} else if (process.argv[2] === '--cluster') {
  const [anvilUrl, upstreamWs, chainId, workers] = process.argv.slice(3)
  clusterMain(anvilUrl!, upstreamWs!, Number(chainId), Number(workers)).catch((err) => {
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
