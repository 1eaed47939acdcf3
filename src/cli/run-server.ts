import type { Env } from '../config/env.ts'
import type { NetworkConfig } from '../config/file.ts'
import { createLogger, type Logger } from '../logger.ts'
import type { ClusterWorker } from '../server/cluster.ts'
import { type Halyard, randomToken, startHalyard } from '../server/runtime.ts'
import type { Storage } from '../storage/database.ts'
import {
  ensureDir,
  loadOrCreateSecretKey,
  readAdminFile,
  removeAdminFile,
  writeAdminFile,
} from './data-dir.ts'

export interface ServerRun {
  halyard: Halyard
  logger: Logger
  /** Resolves when a signal has stopped the server and every cleanup has run. */
  stopped: Promise<void>
}

/**
 * Starts Halyard for a CLI command: guards the data dir, publishes the loopback admin
 * endpoint for the CLI, and stops everything (server, then `cleanup`) on SIGINT/SIGTERM.
 */
export async function runServer(opts: {
  env: Env
  networks: NetworkConfig[]
  devMode: boolean
  cleanup?: () => Promise<void>
  /** Set in a cluster worker: only the leader runs background jobs and publishes the admin file. */
  worker?: ClusterWorker | undefined
  /**
   * Storage the caller opened early (dev overlaps PGlite's start with the devnet's) after its
   * own holder check; closed here after the server on stop (on a failed start, by the caller).
   */
  storage?: Storage
  /** Accounts whose keys are the operator (dev mode: its own dev account). */
  operatorEmails?: readonly string[]
}): Promise<ServerRun> {
  const { worker } = opts
  const { env } = opts
  const logger = createLogger(env.HALYARD_LOG_LEVEL)
  ensureDir(env.dataDir)
  const holder = env.DATABASE_URL ? undefined : readAdminFile(env.dataDir)
  if (holder) {
    throw new Error(`another Halyard (pid ${holder.pid}) is serving the data dir ${env.dataDir}`)
  }
  const secretKey = loadOrCreateSecretKey(env.dataDir, env.HALYARD_SECRET_KEY)
  const adminToken = worker?.adminToken ?? randomToken()
  const startWith = opts.storage ? { storage: opts.storage } : {}
  const halyard = await startHalyard({
    ...startWith,
    env,
    networks: opts.networks,
    devMode: opts.devMode,
    secretKey,
    adminToken,
    ...(opts.operatorEmails ? { operatorEmails: opts.operatorEmails } : {}),
    logger,
    backgroundJobs: worker?.leader ?? true,
    workerIndex: worker?.index,
  })
  const publishes = worker === undefined || worker.leader
  if (publishes) writeAdminFile(env.dataDir, { origin: halyard.origin, token: adminToken, pid: process.pid })

  let resolveStopped!: () => void
  const stopped = new Promise<void>((r) => {
    resolveStopped = r
  })
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down')
    const force = setTimeout(() => process.exit(1), 15_000)
    force.unref()
    try {
      await halyard.close()
    } catch (err) {
      logger.error({ err }, 'error while closing the server')
    }
    await opts.storage?.close().catch((err) => logger.error({ err }, 'error while closing storage'))
    await opts.cleanup?.().catch((err) => logger.error({ err }, 'error during cleanup'))
    if (publishes) removeAdminFile(env.dataDir, process.pid)
    resolveStopped()
  }
  process.once('SIGINT', () => void stop('SIGINT'))
  process.once('SIGTERM', () => void stop('SIGTERM'))
  return { halyard, logger, stopped }
}
