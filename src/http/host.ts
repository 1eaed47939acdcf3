import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import type { AuthService } from '../auth/service.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { Env } from '../config/env.ts'
import type { RateLimiter } from '../limits/limiter.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { Forwarded } from '../net/forwarded.ts'
import type { Storage } from '../storage/database.ts'
import type { Charger } from './charge.ts'

/** Everything a feature may use: built once per process, shared by routes and workers. */
export interface AppContext {
  readonly env: Env
  readonly devMode: boolean
  readonly logger: Logger
  readonly storage: Storage
  readonly auth: AuthService
  readonly limiter: RateLimiter
  readonly networks: NetworkRegistry
  readonly metrics: Metrics
  readonly charger: Charger
  /** 32-byte key for encryption at rest (signing secrets). */
  readonly secretKey: Buffer
  /**
   * Who a request comes from behind trusted proxies (HALYARD_TRUSTED_PROXIES): the client's IP
   * and scheme, for any transport (src/net/forwarded.ts).
   */
  readonly forwarded: Forwarded
  /**
   * Where users reach Halyard, e.g. `https://halyard.example.com` (HALYARD_PUBLIC_URL; without
   * it, `http://host:port` of the listener). Known once the server listens: read it per request.
   */
  publicOrigin(): string
  /** Shared Redis connection for caches and fan-out, when REDIS_URL is set. */
  readonly redis: Redis | undefined
}

/** A background job started with the server and stopped before storage closes. */
export interface BackgroundTask {
  readonly name: string
  stop(): Promise<void>
}

export interface FeatureHost {
  readonly app: FastifyInstance
  readonly ctx: AppContext
  /** A worker stopped (in reverse order) when the server closes, before storage closes. */
  addTask(task: BackgroundTask): void
  /**
   * Runs once every feature has registered, before the server listens: start background loops
   * here, so that consumers other features attach (e.g. to the indexer) see every block.
   */
  onStart(fn: () => Promise<void> | void): void
}

/** A worker with a start and a stop, as the indexer, the bundler and sponsorship settlement have. */
export interface Worker {
  start(): Promise<void> | void
  stop(): Promise<void>
}

/** Starts `worker` with the server and stops it (as the task `name`) when the server closes. */
export function runWorker(host: FeatureHost, name: string, worker: Worker): void {
  host.onStart(() => worker.start())
  host.addTask({ name, stop: () => worker.stop() })
}
