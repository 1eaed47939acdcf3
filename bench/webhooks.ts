/**
 * npm run bench:webhooks — webhook matching and delivery, on PostgreSQL, loopback only.
 *
 * 1. A local HTTP receiver, on its own thread (BENCH_RECEIVER=inline puts it on Halyard's
 *    event loop instead, as before). Baseline: its own raw request rate under a plain HTTP
 *    load (autocannon, 256 connections, the same body size).
 * 2. Halyard (dev mode, so plain-HTTP loopback receivers are allowed) on anvil, with 1,000
 *    token_transfer webhooks watching 100,000 addresses (100 each).
 * 3. Latency: LATENCY_BLOCKS blocks, one every ~second, each with 1,000 matching transfers
 *    (one per webhook), after WARMUP_BLOCKS (default 2, BENCH_WARMUP_BLOCKS) alike whose
 *    figures are printed apart: the first blocks open the receiver connections and run cold
 *    code. Block-to-delivery = receiver arrival − the moment the block was
 *    mined (anvil_mine returned); p50/p99; and where a block's time goes, stage by stage, from
 *    the indexer's and matcher's debug records (captured through the logger).
 * 4. Throughput: one block with BURST_TRANSFERS matching transfers (10 per webhook): events
 *    matched per second (mine → indexer committed the block and its events) and deliveries
 *    per second (mine → last event acknowledged), with the ratio to the baseline.
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the server.
 * BENCH_PER_BLOCK=1 prints each latency block's timeline.
 * BENCH_FORMAT=B creates the webhooks with delivery form B instead of A.
 * BENCH_UPSTREAM_WS=1 gives the network anvil's WebSocket URL, so the indexer wakes on each
 * pushed head instead of at its next poll; BENCH_BLOCK_TIME_MS (default 80: a 20 ms head poll)
 * sets the network's block time, and with it the poll interval (12000: a mainnet-like 1 s poll).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import autocannon from 'autocannon'
import pg from 'pg'
import { encodeAbiParameters, keccak256 } from 'viem'
import { sleep } from '../src/common/time.ts'
import { loadEnv } from '../src/config/env.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { Devnet } from '../src/devnet/demo.ts'
import { createLogger } from '../src/logger.ts'
import { networkSchema } from '../src/server/config-schema.ts'
import { startHalyard } from '../src/server/runtime.ts'
import { openStorage } from '../src/storage/database.ts'
import type { Address } from '../src/types.ts'
import { startReceiver } from './lib/receiver.ts'

const DB_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const WEBHOOKS = 1000
const ADDRESSES_PER_WEBHOOK = 100
const LATENCY_BLOCKS = 8
const WARMUP_BLOCKS = Number(process.env.BENCH_WARMUP_BLOCKS ?? 2)
const BURST_SPRAYS = 10
/** Concurrent delivery lanes (HALYARD_WEBHOOK_CONCURRENCY and _PER_HOST: one receiver). */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 256)
const BASELINE_CONNECTIONS = 256
const BASELINE_S = 4
const UPSTREAM_WS = process.env.BENCH_UPSTREAM_WS === '1'
const BLOCK_TIME_MS = Number(process.env.BENCH_BLOCK_TIME_MS ?? 80)

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
/** Milliseconds on the performance clock, comparable across threads. */
const now = () => performance.timeOrigin + performance.now()
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 }

/**
 * Halyard's log at debug level: the stage records ('block indexed', 'webhook events') are kept
 * by block; other lines go to stdout only at or above BENCH_LOG_LEVEL (default: none).
 */
function stageLog() {
  const show = LEVELS[process.env.BENCH_LOG_LEVEL ?? 'silent'] ?? Number.POSITIVE_INFINITY
  const indexed = new Map<number, Record<string, number>>()
  const matched = new Map<number, Record<string, number>>()
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue
        const rec = JSON.parse(line) as Record<string, unknown>
        if (rec.msg === 'block indexed') indexed.set(Number(rec.block), rec as Record<string, number>)
        else if (rec.msg === 'webhook events') matched.set(Number(rec.block), rec as Record<string, number>)
        if ((rec.level as number) >= show) process.stdout.write(`${line}\n`)
      }
      done()
    },
  })
  return { logger: createLogger('debug', stream), indexed, matched }
}

/** The address DemoERC20.spray(seed, …) mints to at position i. */
const sprayed = (seed: number, i: number): Address =>
  `0x${keccak256(encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [BigInt(seed), BigInt(i)])).slice(-40)}` as Address

const FORMAT = process.env.BENCH_FORMAT === 'B' ? 'B' : 'A'

async function main() {
  // 1. Receiver: records arrival time and block per event; answers 200 at once.
  const receiver = await startReceiver(process.env.BENCH_RECEIVER === 'inline' ? 'inline' : 'thread')
  const rport = receiver.port
  const arrivalsSince = (from: number) =>
    Array.from({ length: receiver.count() - from }, (_, i) => receiver.arrival(from + i))
  const sampleBody = JSON.stringify({
    id: `evt_${'0'.repeat(24)}`,
    event_type: 'token_transfer',
    webhook_id: `wh_${'0'.repeat(24)}`,
    created_at: new Date().toISOString(),
    data: {
      chain: 'ethereum-devnet',
      block_number: 1,
      tx_hash: `0x${'0'.repeat(64)}`,
      contract: sprayed(0, 0),
      from: sprayed(0, 1),
      to: sprayed(0, 2),
      value: '1',
      symbol: 'BNCH',
      decimals: 18,
    },
  })
  console.log(
    `baseline: plain HTTP load on the receiver (${BASELINE_CONNECTIONS} connections, ${BASELINE_S} s) …`,
  )
  const base = await autocannon({
    url: `http://127.0.0.1:${rport}/wh/base`,
    method: 'POST',
    connections: BASELINE_CONNECTIONS,
    duration: BASELINE_S,
    headers: { 'content-type': 'application/json' },
    body: sampleBody,
  })
  const baselineRps = base.requests.average

  const anvil = await startAnvil({ extraArgs: ['--gas-limit', '2000000000'] })
  const schema = `bench_${randomBytes(4).toString('hex')}`
  const storage = await openStorage({ databaseUrl: DB_URL, schema, poolSize: 20 })
  const stages = stageLog()
  let closeHalyard = async () => {}
  try {
    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['Bench', 'BNCH', 18])
    const halyard = await startHalyard({
      logger: stages.logger,
      env: loadEnv({
        HALYARD_LOG_LEVEL: 'debug',
        HALYARD_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-bench-')),
        HALYARD_WEBHOOK_CONCURRENCY: String(CONCURRENCY),
        HALYARD_WEBHOOK_PER_HOST: String(CONCURRENCY),
      }),
      networks: [
        networkSchema.parse({
          chain: 'ethereum',
          network: 'devnet',
          chainId: anvil.chainId,
          confirmations: 0,
          // Default: a fast local devnet, whose head the indexer polls every 20 ms (a quarter of this).
          blockTimeMs: BLOCK_TIME_MS,
          upstreams: [UPSTREAM_WS ? { url: anvil.url, ws: anvil.wsUrl } : { url: anvil.url }],
        }),
      ],
      storage,
      secretKey: randomBytes(32),
      port: 0,
      host: '127.0.0.1',
      devMode: true,
    })
    closeHalyard = () => halyard.close()
    await halyard.ctx.auth.createAccount('bench@bench.local', 'enterprise')
    const { key } = await halyard.ctx.auth.createKey({ accountEmail: 'bench@bench.local', env: 'test' })

    // 2. 1,000 webhooks; webhook w watches spray position w of seeds 0..99, so every spray of
    //    1,000 transfers hits each webhook exactly once.
    console.log(`creating ${WEBHOOKS} webhooks watching ${WEBHOOKS * ADDRESSES_PER_WEBHOOK} addresses …`)
    const queue = Array.from({ length: WEBHOOKS }, (_, w) => w)
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let w = queue.shift(); w !== undefined; w = queue.shift()) {
          const addresses = Array.from({ length: ADDRESSES_PER_WEBHOOK }, (_, seed) => sprayed(seed, w))
          const res = await fetch(`${halyard.baseUrl}/webhooks`, {
            method: 'POST',
            headers: { 'x-api-key': key, 'content-type': 'application/json' },
            body: JSON.stringify({
              url: `http://127.0.0.1:${rport}/wh/${w}`,
              chain: 'ethereum-devnet',
              event_type: 'token_transfer',
              config: { addresses },
              format: FORMAT,
            }),
          })
          if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${await res.text()}`)
        }
      }),
    )
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await halyard.services.indexer.waitForBlock('ethereum-devnet', head, 120_000)
    await dev.rpc('evm_setAutomine', [false])
    receiver.setCounting(true)

    const mine = async (seeds: number[]) => {
      for (const seed of seeds) {
        await dev.send('DemoERC20', token, 'spray', [BigInt(seed), BigInt(WEBHOOKS), 1n], {
          gas: 60_000_000n,
          wait: false,
        })
      }
      await dev.rpc('anvil_mine', ['0x1'])
      const minedAt = now()
      const number = Number(BigInt(await dev.rpc<string>('eth_blockNumber')))
      return { number, minedAt }
    }
    const waitFor = async (n: number, what: string) => {
      const end = Date.now() + 60_000
      while (receiver.count() < n) {
        if (Date.now() > end) {
          const why = await storage.db
            .selectFrom('webhook_attempts')
            .select((eb) => ['error', eb.fn.countAll<string>().as('n')])
            .groupBy('error')
            .execute()
          const byBlock = await storage.db
            .selectFrom('webhook_events')
            .select((eb) => ['block_number', 'status', eb.fn.countAll<string>().as('n')])
            .groupBy(['block_number', 'status'])
            .execute()
          const cursor = await halyard.services.indexer.cursor('ethereum-devnet')
          const head = await dev.rpc<string>('eth_blockNumber')
          throw new Error(
            `timed out waiting for ${what} (${receiver.count()}/${n}); attempts: ${JSON.stringify(why)}; events: ${JSON.stringify(byBlock)}; cursor ${cursor?.number} head ${head}; mined ${JSON.stringify([...minedAt.keys()])}`,
          )
        }
        await sleep(5)
      }
    }

    // 3. Latency: one block per ~second, 1,000 events each, after WARMUP_BLOCKS like them that
    //    open the receiver connections and warm the JIT and query plans (a running service's
    //    steady state); their figures are printed apart.
    const blocks = async (seeds: number[], minedAt: Map<number, number>) => {
      for (const seed of seeds) {
        const m = await mine([seed])
        minedAt.set(m.number, m.minedAt)
        await halyard.services.indexer.waitForBlock('ethereum-devnet', BigInt(m.number), 120_000)
        await sleep(Math.max(0, 1000 - (now() - m.minedAt)))
      }
    }
    console.log(`warm-up: ${WARMUP_BLOCKS} blocks × ${WEBHOOKS} matching transfers …`)
    const warmMinedAt = new Map<number, number>()
    // Seeds from the top of the watched range: the latency and burst blocks use 0 and up.
    await blocks(
      Array.from({ length: WARMUP_BLOCKS }, (_, w) => ADDRESSES_PER_WEBHOOK - 1 - w),
      warmMinedAt,
    )
    await waitFor(WARMUP_BLOCKS * WEBHOOKS, 'warm-up deliveries')
    const warmLatencies = arrivalsSince(0)
      .map((a) => a.at - (warmMinedAt.get(a.block) as number))
      .sort((x, y) => x - y)
    const warmed = receiver.count()
    console.log(`latency: ${LATENCY_BLOCKS} blocks × ${WEBHOOKS} matching transfers …`)
    const minedAt = new Map<number, number>()
    await blocks(
      Array.from({ length: LATENCY_BLOCKS }, (_, b) => b),
      minedAt,
    )
    await waitFor(warmed + LATENCY_BLOCKS * WEBHOOKS, 'latency deliveries')
    const arrivals = arrivalsSince(warmed)
    const latencies = arrivals.map((a) => a.at - (minedAt.get(a.block) as number)).sort((x, y) => x - y)
    // Per block: mined → first and → last delivery (the spread is the delivery of 1,000 events).
    const firstByBlock = new Map<number, number>()
    const lastByBlock = new Map<number, number>()
    for (const a of arrivals) {
      const d = a.at - (minedAt.get(a.block) as number)
      firstByBlock.set(a.block, Math.min(firstByBlock.get(a.block) ?? d, d))
      lastByBlock.set(a.block, Math.max(lastByBlock.get(a.block) ?? d, d))
    }
    const firstMsByBlock = [...firstByBlock.values()].sort((x, y) => x - y)
    const lastMsByBlock = [...lastByBlock.values()].sort((x, y) => x - y)

    // 4. Throughput: one block with BURST_SPRAYS × 1,000 matching transfers.
    const before = receiver.count()
    const burstEvents = BURST_SPRAYS * WEBHOOKS
    console.log(`throughput: one block with ${burstEvents} matching transfers …`)
    const burst = await mine(Array.from({ length: BURST_SPRAYS }, (_, s) => LATENCY_BLOCKS + s))
    await halyard.services.indexer.waitForBlock('ethereum-devnet', BigInt(burst.number), 120_000)
    const matchedMs = now() - burst.minedAt
    await waitFor(before + burstEvents, 'burst deliveries')
    const burstArrivals = arrivalsSince(before)
    const deliveredMs = Math.max(...burstArrivals.map((a) => a.at)) - burst.minedAt
    const firstMs = Math.min(...burstArrivals.map((a) => a.at)) - burst.minedAt
    const deliveryWindowMs = deliveredMs - firstMs
    const matchedPerS = burstEvents / (matchedMs / 1000)
    const deliveriesPerS = burstEvents / (deliveryWindowMs / 1000)
    const endToEndPerS = burstEvents / (deliveredMs / 1000)

    // Receipts are counted at the receiver; outcomes are recorded in batches just after. Wait
    // (up to 10 s) for the records to catch up so the states show every event delivered.
    const countStates = () =>
      storage.db
        .selectFrom('webhook_events')
        .select((eb) => ['status', eb.fn.countAll<string>().as('n')])
        .groupBy('status')
        .execute()
    let stats = await countStates()
    for (let i = 0; i < 100 && stats.some((s) => s.status !== 'delivered'); i++) {
      await new Promise((r) => setTimeout(r, 100))
      stats = await countStates()
    }
    console.log('')
    console.log(
      `network: blockTimeMs ${BLOCK_TIME_MS}, upstream WebSocket ${UPSTREAM_WS ? 'yes (indexer woken by newHeads)' : 'no (indexer polls only)'}`,
    )
    console.log(`receiver baseline (plain HTTP load)        ${baselineRps.toFixed(0)} req/s`)
    console.log(
      `events matched (burst block, ${burstEvents} events)  ${matchedPerS.toFixed(0)} events/s  (mine → committed ${matchedMs.toFixed(0)} ms)`,
    )
    console.log(
      `deliveries (first → last acknowledged)      ${deliveriesPerS.toFixed(0)} deliveries/s  = ${(deliveriesPerS / baselineRps).toFixed(3)} × baseline  (target ≥ 2000/s)`,
    )
    console.log(`deliveries (block mined → last acknowledged) ${endToEndPerS.toFixed(0)} deliveries/s`)
    console.log(
      `block-to-delivery latency (${latencies.length} events, 1 block/s)  p50 ${pct(latencies, 50).toFixed(0)} ms  p99 ${pct(latencies, 99).toFixed(0)} ms  (target p50 ≤ 250 ms)`,
    )
    if (warmLatencies.length > 0) {
      console.log(
        `  warm-up blocks before it (not in the figures): ${warmLatencies.length} events, p50 ${pct(warmLatencies, 50).toFixed(0)} ms  p99 ${pct(warmLatencies, 99).toFixed(0)} ms`,
      )
    }
    // From the indexer's own clock readings (same process): the bench's wait for the cursor
    // resolves late when the event loop is busy starting the block's deliveries.
    const sinceMined = (key: string) =>
      pct(
        [...minedAt.keys()]
          .map((b) => (stages.indexed.get(b)?.[key] ?? Number.NaN) - (minedAt.get(b) ?? Number.NaN))
          .sort((x, y) => x - y),
        50,
      )
    console.log(
      `  per block (p50 over ${LATENCY_BLOCKS} blocks): mined → indexed with its events committed ${sinceMined('committedAt').toFixed(0)} ms, → first delivery ${pct(firstMsByBlock, 50).toFixed(0)} ms, → last delivery ${pct(lastMsByBlock, 50).toFixed(0)} ms`,
    )
    // Where a latency block's time goes (p50 over the latency blocks of each stage).
    const latencyBlocks = [...minedAt.keys()]
    const stage = (src: Map<number, Record<string, number>>, key: string) =>
      pct(
        latencyBlocks.map((b) => src.get(b)?.[key] ?? Number.NaN).sort((x, y) => x - y),
        50,
      )
    const rows: Array<[string, number]> = [
      ['fetch block + logs (parallel eth_getBlockByNumber, eth_getLogs)', stage(stages.indexed, 'fetchMs')],
      ['decode logs into transfers', stage(stages.indexed, 'decodeMs')],
      ['index insert (transfers, holders, block hash), in the transaction', stage(stages.indexed, 'indexMs')],
      ['  meanwhile, on another connection: matcher webhook lookup', stage(stages.matched, 'lookupMs')],
      ['  meanwhile: matcher builds the events (JSON once each)', stage(stages.matched, 'buildMs')],
      [
        'consumers in the transaction (rest of the match + event insert)',
        stage(stages.indexed, 'consumersMs'),
      ],
      ['  of which: insert the events (one statement, rows as JSON)', stage(stages.matched, 'insertMs')],
      ['cursor + COMMIT', stage(stages.indexed, 'commitMs')],
    ]
    console.log(
      `stage breakdown (p50 per latency block of ${WEBHOOKS} events; receiver on ${receiver.mode === 'thread' ? 'its own thread' : "Halyard's event loop"}):`,
    )
    console.log(
      `  ${'mined → indexer starts the block (head poll wait or push, scheduling)'.padEnd(66)} ${sinceMined('startedAt').toFixed(0).padStart(5)} ms`,
    )
    for (const [label, ms] of rows) console.log(`  ${label.padEnd(66)} ${ms.toFixed(0).padStart(5)} ms`)
    console.log(
      `  ${'committed → first delivery (handoff or claim, send)'.padEnd(66)} ${(pct(firstMsByBlock, 50) - sinceMined('committedAt')).toFixed(0).padStart(5)} ms`,
    )
    console.log(
      `  ${`first → last delivery (${WEBHOOKS} deliveries)`.padEnd(66)} ${(pct(lastMsByBlock, 50) - pct(firstMsByBlock, 50)).toFixed(0).padStart(5)} ms`,
    )
    if (process.env.BENCH_PER_BLOCK === '1') {
      console.log('per block (ms after mined): start, committed, first, p50, last delivery')
      for (const b of [...minedAt.keys()]) {
        const mined = minedAt.get(b) as number
        const own = arrivals.filter((a) => a.block === b).map((a) => a.at - mined)
        const rec = stages.indexed.get(b)
        console.log(
          `  block ${b}: ${((rec?.startedAt ?? Number.NaN) - mined).toFixed(0)}, ${((rec?.committedAt ?? Number.NaN) - mined).toFixed(0)}, ${Math.min(...own).toFixed(0)}, ${pct(
            own.sort((x, y) => x - y),
            50,
          ).toFixed(0)}, ${Math.max(...own).toFixed(0)}`,
        )
      }
    }
    console.log(`event states: ${stats.map((s) => `${s.status} ${s.n}`).join(', ')}`)
  } finally {
    await closeHalyard()
    await storage.close()
    await anvil.stop()
    await receiver.close()
    const c = new pg.Client({ connectionString: DB_URL })
    await c.connect()
    await c.query(`drop schema if exists ${schema} cascade`)
    await c.end()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
