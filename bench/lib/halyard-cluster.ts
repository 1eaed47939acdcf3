/**
 * The cluster flavour of the bench child: the same supervisor and worker start-up as
 * `halyard serve` with HALYARD_WORKERS (src/server/cluster.ts), on a fresh PostgreSQL schema
 * and the Redis limiter, because that is what a cluster requires.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { AuthService } from '../../src/auth/service.ts'
import { AuthStore } from '../../src/auth/store.ts'
import { loadEnv } from '../../src/config/env.ts'
import type { NetworkConfig } from '../../src/config/file.ts'
import { createLogger } from '../../src/logger.ts'
import { clusterWorker, reportReady, superviseWorkers } from '../../src/server/cluster.ts'
import { type Halyard, startHalyard } from '../../src/server/runtime.ts'
import { openStorage } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createBenchKeys } from './bench-keys.ts'

const SECRET_ENV = 'HALYARD_BENCH_SECRET'

function required(name: 'DATABASE_URL' | 'REDIS_URL'): string {
  const v = process.env[name]
  if (!v) throw new Error(`a cluster bench row needs ${name}`)
  return v
}

export interface ClusterPrimary {
  /** http://host:port/v1 of the shared port. */
  baseUrl: string
  /** An enterprise (unthrottled) key. */
  key: string
  /** A key with (unreachably high) limits, so the Redis limiter runs. */
  limitedKey: string
  /** Stops every worker and drops the scratch schema. */
  stop(): Promise<void>
}

/** Primary: a scratch schema, two keys, then the workers; resolves once every worker listens. */
export async function startClusterPrimary(workers: number): Promise<ClusterPrimary> {
  const dbUrl = required('DATABASE_URL')
  required('REDIS_URL')
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const storage = await openStorage({ databaseUrl: dbUrl, schema, poolSize: 2 })
  await migrate(storage.db)
  const { key, limitedKey } = await createBenchKeys(new AuthService(new AuthStore(storage.db)), storage.db)
  await storage.close()

  const logger = createLogger('warn')
  const sup = superviseWorkers(workers, {
    logger,
    env: {
      DATABASE_URL: `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      [SECRET_ENV]: randomBytes(32).toString('hex'),
    },
  })
  const baseUrl = await sup.ready
  const stop = async () => {
    await sup.stop()
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    await client.query(`drop schema if exists ${schema} cascade`)
    await client.end()
  }
  return { baseUrl, key, limitedKey, stop }
}

/** Primary for a bench child: reports {url, key, limitedKey} to the bench; cleans up on disconnect. */
export async function serveClusterPrimary(workers: number, urlPath: string): Promise<void> {
  const primary = await startClusterPrimary(workers)
  const stop = async () => {
    await primary.stop()
    process.exit(0)
  }
  const hello = { url: `${primary.baseUrl}${urlPath}`, key: primary.key, limitedKey: primary.limitedKey }
  if (process.send) process.send(hello)
  else console.log(JSON.stringify(hello))
  process.once('disconnect', stop)
  process.once('SIGINT', stop)
}

/**
 * Worker: one Halyard on the shared port; worker 0 alone runs background jobs. `onStarted`
 * runs before the worker reports ready (a bench hooks its observers there).
 */
export async function serveClusterWorker(
  config: NetworkConfig,
  onStarted?: (h: Halyard, index: number) => void,
): Promise<void> {
  const worker = clusterWorker()
  if (!worker) throw new Error('serveClusterWorker runs in a cluster worker only')
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-'))
  const env = loadEnv({ ...process.env, HALYARD_LOG_LEVEL: 'warn', HALYARD_DATA_DIR: dataDir })
  const h = await startHalyard({
    env,
    networks: [config],
    secretKey: Buffer.from(process.env[SECRET_ENV] ?? '', 'hex'),
    port: 0,
    backgroundJobs: worker.leader,
    workerIndex: worker.index,
  })
  const stop = async () => {
    await h.close()
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  onStarted?.(h, worker.index)
  reportReady(worker.index, h.baseUrl)
}
