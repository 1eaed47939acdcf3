/**
 * npm run bench:ws — WebSocket newHeads fan-out, loopback only, bounded in time.
 *
 * Halyard runs in this process (PGlite in a temp dir, an enterprise key) in front of one anvil;
 * the clients run in a child process (this file with `--clients`), so they do not share
 * Halyard's event loop. For each client count (1,000 and 10,000) every client subscribes to
 * newHeads, then this process mines BLOCKS blocks at BLOCKS_PER_SECOND with evm_mine and the
 * child records when each client received each head. Reported:
 *   - push latency p50/p99 from Halyard receiving the head from upstream to the client receiving
 *     it (the issue's measure), and end to end from sending evm_mine;
 *   - peak RSS of this process (Halyard, plus the bench's own small bookkeeping);
 *   - baseline in the same run: the same clients subscribed to anvil directly (as many as anvil
 *     sustains: connections anvil refuses are counted), end to end from sending evm_mine.
 * Storage: PostgreSQL in a scratch schema when DATABASE_URL is set (what a fleet runs), else
 * PGlite, whose WASM heap alone is ~700 MiB of RSS; idle RSS is printed so the growth under
 * load is visible either way.
 * Env: BENCH_CLIENTS (default "1000,10000"), BENCH_BLOCKS (20), BENCH_BPS (4), DATABASE_URL,
 * BENCH_BASELINE=0 (skip the anvil-direct rows, for profiling only).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import WebSocket from 'ws'
import { loadEnv } from '../src/config/env.ts'
import { networkSchema } from '../src/config/file.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { startHalyard } from '../src/server/runtime.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'

const COUNTS = (process.env.BENCH_CLIENTS ?? '1000,10000').split(',').map(Number)
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 20)
const BLOCKS_PER_SECOND = Number(process.env.BENCH_BPS ?? 4)
/** The whole bench is killed after this long, whatever happens. */
const HARD_LIMIT_MS = 10 * 60_000
const OPEN_CONCURRENCY = 250

const now = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------- client process

type ToParent =
  | { type: 'ready'; connected: number; failed: number }
  | { type: 'done'; received: Record<string, number[]> }

async function clientsMain(url: string, count: number) {
  const received = new Map<number, number[]>()
  const sockets: WebSocket[] = []
  let failed = 0
  const openOne = () =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: 15_000,
      })
      let subId: string | undefined
      ws.on('message', (data) => {
        const t = now()
        const text = data.toString()
        if (subId === undefined) {
          const m = /"result":"(0x[0-9a-fA-F]+)"/.exec(text)
          if (m) {
            subId = m[1]
            sockets.push(ws)
            resolve()
          }
          return
        }
        // A regex instead of JSON.parse: the client side must not dominate the measurement.
        const n = /"number":"(0x[0-9a-fA-F]+)"/.exec(text)
        if (!n) return
        const num = Number.parseInt(n[1]!, 16)
        let list = received.get(num)
        if (!list) {
          list = []
          received.set(num, list)
        }
        list.push(t)
      })
      ws.on('open', () => ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}'))
      const fail = () => {
        if (subId !== undefined || settled) return
        settled = true
        failed++
        resolve()
      }
      let settled = false
      ws.on('error', fail)
      ws.on('close', fail)
      ws.on('unexpected-response', fail)
    })
  for (let i = 0; i < count; i += OPEN_CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, count - i) }, openOne))
  }
  const send = (m: ToParent) => process.send?.(m)
  send({ type: 'ready', connected: sockets.length, failed })
  process.on('message', (m: { type: string }) => {
    if (m.type !== 'finish') return
    for (const ws of sockets) ws.terminate()
    // Exit only once the (large) result message has been handed to the IPC channel.
    process.send?.({ type: 'done', received: Object.fromEntries(received) } satisfies ToParent, () =>
      process.exit(0),
    )
  })
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
}

const pct = (sorted: Float64Array, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

function percentiles(values: number[]) {
  const a = Float64Array.from(values).sort()
  return { p50: pct(a, 50), p99: pct(a, 99) }
}

function startClients(
  url: string,
  count: number,
): Promise<{ child: ChildProcess; connected: number; failed: number }> {
  const child = fork(process.argv[1]!, ['--clients', url, String(count)], {
    execArgv: ['--import', 'tsx', '--max-old-space-size=4096'],
    stdio: 'inherit',
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`client process exited with ${code}`)))
    child.on('message', (m: ToParent) => {
      if (m.type === 'ready') resolve({ child, connected: m.connected, failed: m.failed })
    })
  })
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
  halyardReceived?: Map<number, number>
  halyardFannedOut?: Map<number, number>
  halyardFanOutCpu?: Map<number, number>
}): Promise<Phase> {
  const { child, connected, failed } = await startClients(opts.url, opts.clients)
  let peakRss = process.memoryUsage().rss
  const rssTimer = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
  }, 100)
  const mineSent = new Map<number, number>()
  const first = Number(await rpc(opts.anvilUrl, 'eth_blockNumber')) + 1
  for (let i = 0; i < BLOCKS; i++) {
    const t0 = now()
    mineSent.set(first + i, t0)
    await rpc(opts.anvilUrl, 'evm_mine')
    const wait = t0 + 1000 / BLOCKS_PER_SECOND - now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  }
  await new Promise((r) => setTimeout(r, 1500))
  clearInterval(rssTimer)
  const done = new Promise<Record<string, number[]>>((resolve) => {
    child.on('message', (m: ToParent) => {
      if (m.type === 'done') resolve(m.received)
    })
  })
  child.removeAllListeners('exit')
  child.send({ type: 'finish' })
  const received = await done
  await new Promise((r) => child.once('exit', r))

  const fanOut: number[] = []
  for (const n of mineSent.keys()) {
    const a = opts.halyardReceived?.get(n)
    const b = opts.halyardFannedOut?.get(n)
    if (a !== undefined && b !== undefined) fanOut.push(b - a)
  }
  const fromHalyard: number[] = []
  const endToEnd: number[] = []
  let delivered = 0
  for (const [num, times] of Object.entries(received)) {
    const n = Number(num)
    const sent = mineSent.get(n)
    if (sent === undefined) continue
    delivered += times.length
    const h = opts.halyardReceived?.get(n)
    for (const t of times) {
      endToEnd.push(t - sent)
      if (h !== undefined) fromHalyard.push(t - h)
    }
  }
  return {
    name: opts.name,
    clients: opts.clients,
    connected,
    failed,
    fromHalyard: opts.halyardReceived ? percentiles(fromHalyard) : undefined,
    fanOut: opts.halyardFannedOut ? percentiles(fanOut) : undefined,
    fanOutCpu: opts.halyardFanOutCpu
      ? percentiles([...mineSent.keys()].flatMap((n) => opts.halyardFanOutCpu?.get(n) ?? []))
      : undefined,
    endToEnd: percentiles(endToEnd),
    delivered,
    expected: connected * BLOCKS,
    peakRssMiB: opts.halyardReceived ? peakRss / 2 ** 20 : undefined,
  }
}

async function main() {
  const hardStop = setTimeout(() => {
    console.error(`bench:ws exceeded ${HARD_LIMIT_MS / 60_000} minutes; stopping`)
    process.exit(2)
  }, HARD_LIMIT_MS)
  hardStop.unref()
  const anvil = await startAnvil()
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
        chainId: anvil.chainId,
        blockTimeMs: 1000,
        indexer: { enabled: false },
        upstreams: [{ url: anvil.url, ws: anvil.wsUrl }],
      }),
    ],
    secretKey: Buffer.alloc(32, 7),
    port: 0,
    host: '127.0.0.1',
  })
  const phases: Phase[] = []
  const idleRss = process.memoryUsage().rss / 2 ** 20
  try {
    await halyard.ctx.auth.createAccount('bench@ws.local', 'enterprise')
    const key = (await halyard.ctx.auth.createKey({ accountEmail: 'bench@ws.local', env: 'live' })).key
    const received = new Map<number, number>()
    const streams = halyard.services.ws.streamsFor(halyard.ctx.networks.get('ethereum', 'devnet'))
    streams.onHeadReceived = (n, at) => {
      if (!received.has(Number(n))) received.set(Number(n), at)
    }
    const fannedOut = new Map<number, number>()
    const fanOutCpu = new Map<number, number>()
    streams.onHeadFannedOut = (n, at, cpuMs) => {
      if (!fannedOut.has(Number(n))) fannedOut.set(Number(n), at)
      if (!fanOutCpu.has(Number(n))) fanOutCpu.set(Number(n), cpuMs)
    }
    const halyardUrl = `${halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`
    console.log(`bench:ws — ${BLOCKS} blocks at ${BLOCKS_PER_SECOND}/s per phase`)
    for (const n of COUNTS) {
      console.log(`  Halyard, ${n} clients …`)
      phases.push(
        await runPhase({
          name: 'Halyard',
          url: halyardUrl,
          clients: n,
          anvilUrl: anvil.url,
          halyardReceived: received,
          halyardFannedOut: fannedOut,
          halyardFanOutCpu: fanOutCpu,
        }),
      )
      await waitForNoConnections(halyard.services.ws)
      if (process.env.BENCH_BASELINE === '0') continue
      console.log(`  anvil directly, ${n} clients …`)
      phases.push(await runPhase({ name: 'anvil direct', url: anvil.wsUrl, clients: n, anvilUrl: anvil.url }))
    }
  } finally {
    await halyard.close()
    await anvil.stop()
    rmSync(dataDir, { recursive: true, force: true })
    if (storage && dbUrl) {
      await storage.close()
      const client = new pg.Client({ connectionString: dbUrl })
      await client.connect()
      await client.query(`drop schema if exists ${schema} cascade`)
      await client.end()
    }
  }
  console.log(
    `storage: ${dbUrl ? 'PostgreSQL' : 'PGlite (in-process)'}; Halyard idle RSS ${idleRss.toFixed(0)} MiB`,
  )
  report(phases)
}

async function waitForNoConnections(ws: { connectionCount(): number }) {
  for (let i = 0; i < 200 && ws.connectionCount() > 0; i++) await new Promise((r) => setTimeout(r, 50))
}

const f = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(1))

function report(phases: Phase[]) {
  console.log('')
  console.log(
    '| path | clients (connected) | delivered | p50 / p99 from Halyard receipt (ms) | p50 / p99 from evm_mine (ms) | fan-out loop p50 / p99 (ms) | fan-out CPU p50 / p99 (ms) | peak RSS (MiB) |',
  )
  console.log('|---|---|---|---|---|---|---|---|')
  for (const p of phases) {
    console.log(
      `| ${p.name} | ${p.clients} (${p.connected}${p.failed ? `, ${p.failed} refused` : ''}) | ${p.delivered}/${p.expected} | ${p.fromHalyard ? `${f(p.fromHalyard.p50)} / ${f(p.fromHalyard.p99)}` : '—'} | ${f(p.endToEnd.p50)} / ${f(p.endToEnd.p99)} | ${p.fanOut ? `${f(p.fanOut.p50)} / ${f(p.fanOut.p99)}` : '—'} | ${p.fanOutCpu ? `${f(p.fanOutCpu.p50)} / ${f(p.fanOutCpu.p99)}` : '—'} | ${p.peakRssMiB === undefined ? '—' : p.peakRssMiB.toFixed(0)} |`,
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
} else {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
