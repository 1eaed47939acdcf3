import cluster, { type Worker } from 'node:cluster'
import type { Logger } from '../logger.ts'
import { metricsCollector } from './cluster-metrics.ts'

/**
 * Several Halyard workers on one port (node:cluster), so the gateway uses every core. Only
 * worker 0 runs the singleton background jobs (indexer and its consumers, mail); every worker
 * serves HTTP and WebSocket and delivers webhooks (claims are SKIP LOCKED; src/webhooks/register.ts). Limits stay correct because the cluster is
 * only allowed with PostgreSQL and Redis: every worker charges the same Redis counters.
 */

/** Set by the primary in each worker's environment. */
const INDEX_ENV = 'HALYARD_WORKER_INDEX'
/** One loopback admin token for the whole cluster: an admin call may land on any worker. */
const ADMIN_TOKEN_ENV = 'HALYARD_CLUSTER_ADMIN_TOKEN'

const RESTART_DELAY_MS = 1_000

export interface ClusterWorker {
  readonly index: number
  /** Runs the singleton background jobs (worker 0, and its replacement after a crash). */
  readonly leader: boolean
  readonly adminToken: string | undefined
}

/** This process's place in a cluster; undefined for a process that is not a cluster worker. */
export function clusterWorker(): ClusterWorker | undefined {
  if (!cluster.isWorker) return undefined
  const index = Number(process.env[INDEX_ENV] ?? 0)
  return { index, leader: index === 0, adminToken: process.env[ADMIN_TOKEN_ENV] || undefined }
}

/** What a worker tells the primary once it listens. */
export interface WorkerReady {
  halyardWorkerReady: true
  index: number
  baseUrl: string
}

export function reportReady(index: number, baseUrl: string): void {
  const msg: WorkerReady = { halyardWorkerReady: true, index, baseUrl }
  process.send?.(msg)
}

function isReady(m: unknown): m is WorkerReady {
  return typeof m === 'object' && m !== null && (m as WorkerReady).halyardWorkerReady === true
}

export interface Supervisor {
  /** Resolves with the base URL once every worker listens; rejects if one exits first. */
  readonly ready: Promise<string>
  /** Resolves when every worker has exited after `stop`. */
  readonly stopped: Promise<void>
  stop(): Promise<void>
}

/**
 * Primary side: forks `count` workers of this entry point (same argv and execArgv), each with
 * its index; a worker that dies unexpectedly is forked again with the same index, so the
 * singleton jobs come back with worker 0. `stop` sends SIGTERM and waits for every exit.
 */
export function superviseWorkers(
  count: number,
  opts: { logger: Logger; adminToken?: string; env?: Record<string, string> },
): Supervisor {
  const workers = new Map<number, Worker>()
  const listening = new Set<number>()
  // Workers that reported ready and have not exited: the ones a /metrics round asks.
  const serving = new Set<Worker>()
  const metrics = metricsCollector({ serving: () => serving, expected: count })
  let stopping = false
  let resolveReady!: (url: string) => void
  let rejectReady!: (err: Error) => void
  const ready = new Promise<string>((res, rej) => {
    resolveReady = res
    rejectReady = rej
  })
  ready.catch(() => {})
  let resolveStopped!: () => void
  const stopped = new Promise<void>((r) => {
    resolveStopped = r
  })

  const fork = (index: number) => {
    const w = cluster.fork({
      ...opts.env,
      [INDEX_ENV]: String(index),
      ...(opts.adminToken ? { [ADMIN_TOKEN_ENV]: opts.adminToken } : {}),
    })
    workers.set(index, w)
    // IPC to a worker that just died fails with EPIPE; unhandled, it would crash the primary.
    w.on('error', (err) => opts.logger.warn({ err: err.message, worker: index }, 'worker IPC error'))
    w.on('message', (m: unknown) => {
      if (metrics.handle(w, m) || !isReady(m)) return
      serving.add(w)
      listening.add(index)
      if (listening.size === count) resolveReady(m.baseUrl)
    })
    w.on('exit', (code, signal) => {
      if (workers.get(index) === w) workers.delete(index)
      serving.delete(w)
      metrics.workerGone(w)
      if (stopping) {
        if (workers.size === 0) resolveStopped()
        return
      }
      if (listening.size < count) {
        rejectReady(new Error(`worker ${index} exited (code ${code}) before listening`))
        return
      }
      opts.logger.error({ worker: index, code, signal }, 'worker exited; starting a replacement')
      // A pause, so a worker that dies at once (bad upstream config, full disk) does not spin.
      setTimeout(() => {
        if (!stopping) fork(index)
      }, RESTART_DELAY_MS)
    })
  }
  for (let i = 0; i < count; i++) fork(i)

  return {
    ready,
    stopped,
    async stop() {
      if (stopping) return stopped
      stopping = true
      if (workers.size === 0) resolveStopped()
      for (const w of workers.values()) w.process.kill('SIGTERM')
      return stopped
    },
  }
}
