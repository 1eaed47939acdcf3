import cluster from 'node:cluster'
import { ConfigError } from '../common/validation.ts'
import type { Env } from '../config/env.ts'
import { loadConfigFile } from '../server/config-schema.ts'

/** `halyard serve [--config FILE]`: production mode; HALYARD_WORKERS > 1 runs a cluster. */
export async function serve(env: Env, configFile: string | undefined): Promise<void> {
  const file = configFile ?? env.HALYARD_CONFIG
  if (!file) throw new ConfigError('no config file: pass --config FILE or set HALYARD_CONFIG')
  const config = loadConfigFile(file)
  if (!env.HALYARD_SECRET_KEY) {
    throw new ConfigError('HALYARD_SECRET_KEY is required in production (32 bytes as 64 hex digits)')
  }
  // The dashboard is part of every server: its sign-in e-mails need to know where users reach it,
  // and a request's Host cannot say (any client sets it). Dev mode uses its own host and port.
  if (!env.HALYARD_PUBLIC_URL) {
    throw new ConfigError(
      'HALYARD_PUBLIC_URL is required in production: the URL users reach Halyard at, e.g. https://halyard.example.com (dashboard sign-in links point there; see docs/behind-a-proxy.md)',
    )
  }
  if (env.HALYARD_WORKERS > 1 && (!env.DATABASE_URL || !env.REDIS_URL)) {
    // PGlite is one process's database, and the memory limiter would give each worker its own limits.
    throw new ConfigError('HALYARD_WORKERS above 1 needs DATABASE_URL and REDIS_URL')
  }
  // The server's module graph loads only once the config has passed: a bad config or
  // environment is refused in the time it takes to read it.
  const { clusterWorker, reportReady, superviseWorkers } = await import('../server/cluster.ts')
  const { randomToken } = await import('../server/runtime.ts')
  const { createLogger } = await import('../logger.ts')
  const { runServer } = await import('./run-server.ts')
  if (env.HALYARD_WORKERS > 1 && cluster.isPrimary) {
    const logger = createLogger(env.HALYARD_LOG_LEVEL)
    const workers = superviseWorkers(env.HALYARD_WORKERS, { logger, adminToken: randomToken() })
    const stop = () => void workers.stop()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    let baseUrl: string
    try {
      baseUrl = await workers.ready
    } catch (err) {
      await workers.stop()
      throw err
    }
    console.log(
      `Halyard serving ${config.networks.length} network(s) at ${baseUrl} with ${env.HALYARD_WORKERS} workers`,
    )
    await workers.stopped
    return
  }
  const worker = clusterWorker()
  const { halyard, stopped } = await runServer({ env, networks: config.networks, devMode: false, worker })
  if (worker) reportReady(worker.index, halyard.baseUrl)
  else console.log(`Halyard serving ${config.networks.length} network(s) at ${halyard.baseUrl}`)
  await stopped
}
