/**
 * A real Halyard (PGlite, in-memory limits, indexer off unless overridden) in a child process,
 * so a bench's load generator and the server do not share an event loop. A bench file runs
 * `serveHalyardChild` when started with `--server ANVIL_URL` and `startHalyardChild` otherwise.
 * With `workers` the child is a cluster instead (PostgreSQL + Redis, halyard-cluster.ts).
 */
import { type ChildProcess, fork } from 'node:child_process'
import cluster from 'node:cluster'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { loadEnv } from '../../src/config/env.ts'
import type { NetworkConfigInput } from '../../src/config/file.ts'
import { networkSchema } from '../../src/server/config-schema.ts'
import { startHalyard } from '../../src/server/runtime.ts'
import { openStorage } from '../../src/storage/database.ts'
import { createBenchKeys } from './bench-keys.ts'
import { benchNodeArgs, childCommand } from './built-child.ts'
import { serveClusterPrimary, serveClusterWorker } from './halyard-cluster.ts'

/** Set by `startHalyardChild` for a cluster child: how many workers. */
const WORKERS_ENV = 'HALYARD_BENCH_WORKERS'

export interface HalyardChild {
  child: ChildProcess
  /** The URL the bench loads: `baseUrl` + the path the child was asked for. */
  url: string
  /** An enterprise (unthrottled) key. */
  key: string
  /** A key with (unreachably high) limits, so the limiter (Redis with REDIS_URL) runs on every call. */
  limitedKey: string
  /** With `profileDir`: where the child (and its workers) write .cpuprofile files on exit. */
  profileDir?: string
}

/** Child side: serves `path` under the base URL, reports {url, key} to the parent, stops on disconnect. */
export async function serveHalyardChild(
  anvilUrl: string,
  urlPath: string,
  network: Partial<NetworkConfigInput> = {},
): Promise<void> {
  const workers = Number(process.env[WORKERS_ENV] ?? 0)
  if (workers > 0) {
    const config = benchNetwork(anvilUrl, network)
    if (cluster.isWorker) return serveClusterWorker(config)
    return serveClusterPrimary(workers, urlPath)
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-'))
  // With REDIS_URL the limited key is counted in Redis, as it would be in a cluster.
  const redis = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}
  const lane = process.env.HALYARD_FAST_LANE ? { HALYARD_FAST_LANE: process.env.HALYARD_FAST_LANE } : {}
  const log = process.env.HALYARD_REQUEST_LOG ? { HALYARD_REQUEST_LOG: process.env.HALYARD_REQUEST_LOG } : {}
  const env = loadEnv({ HALYARD_LOG_LEVEL: 'warn', HALYARD_DATA_DIR: dataDir, ...redis, ...lane, ...log })
  // HALYARD_BENCH_DATABASE_URL: a scratch schema of that PostgreSQL instead of PGlite, so the
  // database's work (a hot key's refresh, the flushes) runs outside the measured process.
  const databaseUrl = process.env[DATABASE_ENV]
  const schema = databaseUrl ? `bench_${randomBytes(6).toString('hex')}` : undefined
  const storage = await openStorage(databaseUrl ? { databaseUrl, schema, poolSize: 4 } : { dataDir })
  const config = benchNetwork(anvilUrl, network)
  const h = await startHalyard({ env, networks: [config], storage, secretKey: randomBytes(32), port: 0 })
  const { key, limitedKey } = await createBenchKeys(h.ctx.auth, storage.db)
  const stop = async () => {
    await h.close()
    await storage.close()
    if (databaseUrl) await dropSchema(databaseUrl, schema)
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  }
  const hello = { url: `${h.baseUrl}${urlPath}`, key, limitedKey }
  // Run by hand (profiling: node --cpu-prof --import tsx bench/<name>.ts --server URL): print, stop on SIGINT.
  if (process.send) process.send(hello)
  else console.log(JSON.stringify(hello))
  process.once('disconnect', stop)
  process.once('SIGINT', stop)
}

/** Set by a bench to run the child on PostgreSQL (bench:rpc-instructions, BENCH_DATABASE=postgres). */
export const DATABASE_ENV = 'HALYARD_BENCH_DATABASE_URL'

async function dropSchema(url: string, schema: string | undefined): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`drop schema if exists ${schema} cascade`)
  await client.end()
}

function benchNetwork(anvilUrl: string, network: Partial<NetworkConfigInput>) {
  return networkSchema.parse({
    chain: 'ethereum',
    network: 'devnet',
    chainId: 31337,
    confirmations: 0,
    blockTimeMs: 1000,
    upstreams: [{ url: anvilUrl }],
    // What is measured is the served path: no block follower sharing its event loop.
    indexer: { enabled: false },
    ...network,
  })
}

/**
 * Parent side: forks `script --server anvilUrl` and waits until its Halyard listens. With
 * `workers`, the child is a cluster of that many workers on DATABASE_URL and REDIS_URL. With
 * `profileDir`, the child runs under `--cpu-prof` (cluster workers inherit the flags) and each
 * process writes its profile there when it exits.
 */
export async function startHalyardChild(
  script: string,
  anvilUrl: string,
  opts: { workers?: number; profileDir?: string; env?: Record<string, string> } = {},
): Promise<HalyardChild> {
  const profile = opts.profileDir ? ['--cpu-prof', '--cpu-prof-dir', opts.profileDir] : []
  const run = await childCommand(script)
  const child = fork(run.file, ['--server', anvilUrl], {
    execArgv: [...run.execArgv, ...profile, ...benchNodeArgs()],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...opts.env, [WORKERS_ENV]: String(opts.workers ?? 0) },
  })
  type Hello = { url: string; key: string; limitedKey: string }
  const msg = await new Promise<Hello>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Hello))
    child.once('exit', (code) => reject(new Error(`Halyard exited with code ${code} before listening`)))
  })
  return { child, ...msg, ...(opts.profileDir ? { profileDir: opts.profileDir } : {}) }
}

/** Stops a child by disconnecting (it closes cleanly, writing any profile); killed after `waitMs`. */
export async function stopHalyardChild(h: HalyardChild, waitMs: number): Promise<void> {
  if (h.child.exitCode !== null || !h.child.connected) return
  const exited = new Promise((r) => h.child.once('exit', r))
  h.child.disconnect()
  await Promise.race([exited, new Promise((r) => setTimeout(r, waitMs))])
  if (h.child.exitCode === null) h.child.kill('SIGKILL')
}
