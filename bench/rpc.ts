/**
 * npm run bench:rpc — JSON-RPC gateway throughput and latency, all in one run, loopback only.
 *
 * Load generator: wrk when installed (C, one thread: it leaves the 2 cores to the servers),
 * else autocannon (Node, which takes about a core itself); BENCH_LOADGEN=autocannon forces it.
 * Every row of one run uses the same generator, so ratios compare like with like.
 *
 * Rows (50 connections, a fixed duration each, after a short warm-up):
 *   direct anvil        eth_blockNumber, eth_chainId, finalized eth_getBlockByNumber, batch of 10
 *   nginx → anvil       eth_blockNumber through `proxy_pass` (skipped with a note without nginx)
 *   Halyard → anvil     the same calls through /v1/rpc/ethereum/devnet with an enterprise key
 *   Halyard × N workers eth_blockNumber and eth_chainId through a cluster (HALYARD_WORKERS) on
 *                       PostgreSQL + Redis, when DATABASE_URL and REDIS_URL are set, compared
 *                       with nginx running N workers (the single process with nginx's one)
 *                       (BENCH_WORKERS, default 2; 0 skips), with the enterprise key (no
 *                       limiter call) and with a limited key (one Redis check per call)
 * Prints req/s, p50, p99, and the ratios the issue targets: uncached Halyard ≥ 0.8 × nginx,
 * cached Halyard ≥ 1.5 × direct anvil, added p50 ≤ 1 ms.
 *
 * Halyard runs in a child process (this file with `--server`), so the load generator and the
 * gateway do not share an event loop; nginx runs on a free loopback port with a
 * temporary config and is killed afterwards, as are anvil and Halyard.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
import { startAnvil, waitForRpc } from '../src/devnet/anvil.ts'

import { type HalyardChild, serveHalyardChild, startHalyardChild } from './lib/halyard-child.ts'
import { findWrk, runWrk } from './lib/wrk.ts'

const CONNECTIONS = 50
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_S = 1
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2)
const WRK = process.env.BENCH_LOADGEN === 'autocannon' ? undefined : findWrk()

const call = (method: string, params: unknown[] = [], id = 1) => ({ jsonrpc: '2.0', id, method, params })

interface Row {
  name: string
  reqPerSec: number
  p50: number
  p99: number
  errors: number
}

async function load(
  name: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Row> {
  if (WRK) {
    const h = { 'content-type': 'application/json', ...headers }
    await runWrk(WRK, {
      url,
      body: JSON.stringify(body),
      headers: h,
      connections: CONNECTIONS,
      seconds: WARMUP_S,
    })
    const r = await runWrk(WRK, {
      url,
      body: JSON.stringify(body),
      headers: h,
      connections: CONNECTIONS,
      seconds: DURATION_S,
    })
    return { name, ...r }
  }
  const opts = {
    url,
    method: 'POST' as const,
    connections: CONNECTIONS,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }
  await autocannon({ ...opts, duration: WARMUP_S })
  const r = await autocannon({ ...opts, duration: DURATION_S })
  return {
    name,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

function findNginx(): string | undefined {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    try {
      execFileSync(p, ['-v'], { stdio: 'ignore' })
      return p
    } catch {}
  }
  return undefined
}

async function startNginx(
  bin: string,
  anvilPort: number,
  workers = 1,
): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-nginx-'))
  const port = await freePort()
  const conf = path.join(dir, 'nginx.conf')
  writeFileSync(
    conf,
    `worker_processes ${workers};
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream anvil { server 127.0.0.1:${anvilPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://anvil;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  )
  const child = spawn(bin, ['-p', dir, '-c', conf], { stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  await waitForRpc(url, 10_000)
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const fmt = (n: number, d = 0) => n.toFixed(d)

async function main() {
  const anvil = await startAnvil()
  let nginx: Awaited<ReturnType<typeof startNginx>> | undefined
  let halyard: HalyardChild | undefined
  try {
    // Blocks to read: block 1 is far below the finality depth once 10 more exist.
    await fetch(anvil.url, { method: 'POST', body: JSON.stringify(call('anvil_mine', ['0xc'])) })
    const finalizedBlock = call('eth_getBlockByNumber', ['0x1', false])
    const batch = Array.from({ length: 10 }, (_, i) => call('eth_blockNumber', [], i + 1))
    halyard = await startHalyardChild(import.meta.filename, anvil.url)
    const hk = { 'x-api-key': halyard.key }
    const nginxBin = findNginx()
    if (nginxBin) nginx = await startNginx(nginxBin, anvil.port)

    const rows: Row[] = []
    const run = async (name: string, url: string, body: unknown, headers?: Record<string, string>) => {
      const row = await load(name, url, body, headers)
      rows.push(row)
      console.log(`  ${name}: ${fmt(row.reqPerSec)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms`)
      return row
    }
    console.log(
      `bench:rpc — ${WRK ? 'wrk (1 thread)' : 'autocannon'}, ${CONNECTIONS} connections, ${DURATION_S} s per row`,
    )
    const direct = await run('anvil direct · eth_blockNumber', anvil.url, call('eth_blockNumber'))
    const viaNginx = nginx
      ? await run('nginx → anvil · eth_blockNumber', nginx.url, call('eth_blockNumber'))
      : undefined
    const uncached = await run(
      'Halyard · eth_blockNumber (uncached)',
      halyard.url,
      call('eth_blockNumber'),
      hk,
    )
    const directChain = await run('anvil direct · eth_chainId', anvil.url, call('eth_chainId'))
    const cachedChain = await run('Halyard · eth_chainId (cached)', halyard.url, call('eth_chainId'), hk)
    const directBlock = await run('anvil direct · eth_getBlockByNumber(finalized)', anvil.url, finalizedBlock)
    const cachedBlock = await run(
      'Halyard · eth_getBlockByNumber(finalized, cached)',
      halyard.url,
      finalizedBlock,
      hk,
    )
    const directBatch = await run('anvil direct · batch of 10 eth_blockNumber', anvil.url, batch)
    const halyardBatch = await run('Halyard · batch of 10 eth_blockNumber', halyard.url, batch, hk)

    // The cluster rows: a second child, started after the first stops, so they never compete.
    let clusterNote: string | undefined
    let clustered: { uncached: Row; cached: Row; nginx: Row | undefined } | undefined
    if (WORKERS > 0 && process.env.DATABASE_URL && process.env.REDIS_URL) {
      await stopChild(halyard)
      halyard = await startHalyardChild(import.meta.filename, anvil.url, { workers: WORKERS })
      const ck = { 'x-api-key': halyard.key }
      const label = `Halyard × ${WORKERS} workers (PostgreSQL, Redis limits)`
      // Like with like: the cluster's uncached row is compared with nginx running as many workers.
      let nginxN: Row | undefined
      if (nginxBin) {
        await nginx?.stop()
        nginx = await startNginx(nginxBin, anvil.port, WORKERS)
        nginxN = await run(
          `nginx × ${WORKERS} workers → anvil · eth_blockNumber`,
          nginx.url,
          call('eth_blockNumber'),
        )
      }
      clustered = {
        uncached: await run(`${label} · eth_blockNumber`, halyard.url, call('eth_blockNumber'), ck),
        cached: await run(`${label} · eth_chainId (cached)`, halyard.url, call('eth_chainId'), ck),
        nginx: nginxN,
      }
      if (halyard.limitedKey) {
        // Enterprise keys skip the limiter; this one is counted in Redis on every call.
        const lk = { 'x-api-key': halyard.limitedKey }
        await run(`${label} · eth_blockNumber, limited key`, halyard.url, call('eth_blockNumber'), lk)
        await run(`${label} · eth_chainId (cached), limited key`, halyard.url, call('eth_chainId'), lk)
      }
    } else if (WORKERS > 0) {
      clusterNote = 'cluster rows skipped: they need DATABASE_URL and REDIS_URL'
    }

    console.log('\n| row | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|')
    for (const r of rows)
      console.log(`| ${r.name} | ${fmt(r.reqPerSec)} | ${r.p50} | ${r.p99} | ${r.errors} |`)
    if (!nginx)
      console.log('| nginx → anvil | skipped: nginx is not installed (apt-get install nginx-light) | | | |')
    if (clusterNote) console.log(`| Halyard × ${WORKERS} workers | ${clusterNote} | | | |`)
    if (!WRK)
      console.log(
        '\nnote: autocannon (wrk not installed, or BENCH_LOADGEN=autocannon) shares the 2 cores with the servers',
      )

    const ratio = (a: Row, b: Row) => a.reqPerSec / b.reqPerSec
    console.log('\nratios (target in brackets):')
    if (viaNginx)
      console.log(
        `  uncached Halyard / nginx:                 ${fmt(ratio(uncached, viaNginx), 2)}×  [≥ 0.8]`,
      )
    else console.log('  uncached Halyard / nginx:                 n/a (nginx not installed)')
    console.log(`  uncached Halyard / direct anvil:          ${fmt(ratio(uncached, direct), 2)}×`)
    console.log(
      `  cached eth_chainId Halyard / direct:      ${fmt(ratio(cachedChain, directChain), 2)}×  [≥ 1.5]`,
    )
    console.log(
      `  cached finalized block Halyard / direct:  ${fmt(ratio(cachedBlock, directBlock), 2)}×  [≥ 1.5]`,
    )
    console.log(`  batch of 10 Halyard / direct:             ${fmt(ratio(halyardBatch, directBatch), 2)}×`)
    console.log(`  added p50 (uncached − direct):            ${fmt(uncached.p50 - direct.p50, 2)} ms  [≤ 1]`)
    if (clustered) {
      if (clustered.nginx)
        console.log(
          `  ${WORKERS} workers uncached / nginx × ${WORKERS}:          ${fmt(ratio(clustered.uncached, clustered.nginx), 2)}×  [≥ 0.8]`,
        )
      console.log(
        `  ${WORKERS} workers cached eth_chainId / direct:   ${fmt(ratio(clustered.cached, directChain), 2)}×  [≥ 1.5]`,
      )
      console.log(
        `  ${WORKERS} workers added p50 (uncached − direct): ${fmt(clustered.uncached.p50 - direct.p50, 2)} ms  [≤ 1]`,
      )
    }
    const errors = rows.reduce((n, r) => n + r.errors, 0)
    if (errors > 0) console.log(`  WARNING: ${errors} failed responses during the run`)
  } finally {
    await nginx?.stop()
    if (halyard) await stopChild(halyard)
    await anvil.stop()
  }
}

async function stopChild(h: HalyardChild) {
  if (h.child.exitCode !== null || !h.child.connected) return
  const exited = new Promise((r) => h.child.once('exit', r))
  h.child.disconnect()
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))])
  if (h.child.exitCode === null) h.child.kill('SIGKILL')
}

if (process.argv[2] === '--server') {
  await serveHalyardChild(process.argv[3] ?? '', '/rpc/ethereum/devnet', { finalityDepth: 2 })
} else {
  await main()
}
