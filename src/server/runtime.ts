import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { makeAdminGuard, registerAdminRoutes } from '../auth/admin-routes.ts'
import { AuthService } from '../auth/service.ts'
import { AuthStore } from '../auth/store.ts'
import { managedPoolFactory, NetworkRegistry, type PoolFactory } from '../chains/registry.ts'
import type { Env } from '../config/env.ts'
import type { NetworkConfig } from '../config/file.ts'
import { registerLoginLinkAdminRoute } from '../dashboard/login-link.ts'
import { Charger } from '../http/charge.ts'
import type { AppContext, BackgroundTask } from '../http/host.ts'
import type { RateLimiter } from '../limits/limiter.ts'
import { MemoryRateLimiter } from '../limits/memory-limiter.ts'
import { RedisRateLimiter } from '../limits/redis-limiter.ts'
import { createLogger, type Logger } from '../logger.ts'
import { Metrics } from '../metrics.ts'
import { forwarded } from '../net/forwarded.ts'
import { isKnownMethod } from '../rpc/methods/known.ts'
import { describeMethod } from '../rpc/methods/registry.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { DEFAULT_DB_TIMEOUT_MS } from '../storage/pg-pool.ts'
import { buildApp } from './app.ts'
import { watchDatabase } from './database-watch.ts'
import { type Features, registerFeatures } from './features.ts'
import { type ReadinessCheck, registerOpsRoutes } from './ops-routes.ts'

export interface StartOptions {
  env: Env
  networks: NetworkConfig[]
  secretKey: Buffer
  devMode?: boolean
  /** Overrides env HALYARD_PORT / HALYARD_HOST (tests use port 0). */
  port?: number
  host?: string
  /** Use this storage instead of opening one from env (tests); it is not closed by Halyard. */
  storage?: Storage
  logger?: Logger
  poolFactory?: PoolFactory
  /** Token for the loopback admin API; the admin routes exist only when set. */
  adminToken?: string
  /**
   * Accounts (e-mails) whose keys are the operator, beside HALYARD_OPERATOR_EMAILS: `halyard dev`
   * names its own dev account, so the key it prints reaches the operator controls.
   */
  operatorEmails?: readonly string[]
  /**
   * Whether this process starts the singleton background jobs (features' `onStart`: indexer,
   * webhook delivery, ...). False for every cluster worker but one (cluster.ts).
   */
  backgroundJobs?: boolean
  /** Cluster worker index, answered as X-Halyard-Worker (which worker served a request). */
  workerIndex?: number
}

export interface Halyard {
  readonly app: FastifyInstance
  readonly ctx: AppContext
  readonly services: Features
  /** http://host:port */
  readonly origin: string
  /** Where users reach Halyard: HALYARD_PUBLIC_URL, else `origin` (sign-in links point here). */
  readonly publicOrigin: string
  /** origin + /v1 */
  readonly baseUrl: string
  readonly wsOrigin: string
  close(): Promise<void>
}

/** Builds and starts one Halyard instance: storage, services, routes, workers, listener. */
export async function startHalyard(opts: StartOptions): Promise<Halyard> {
  const env = opts.env
  const logger = opts.logger ?? createLogger(env.HALYARD_LOG_LEVEL)
  const ownsStorage = !opts.storage
  const storage = opts.storage ?? (await openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir }))
  const tasks: BackgroundTask[] = []
  let redis: Redis | undefined
  let limiter: RateLimiter | undefined
  let networks: NetworkRegistry | undefined
  try {
    await migrate(storage.db)
    if (env.REDIS_URL) {
      redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false })
      redis.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'))
    }
    const metrics = new Metrics()
    limiter = env.REDIS_URL
      ? await redisLimiter(env, env.REDIS_URL, logger, metrics)
      : new MemoryRateLimiter()
    networks = new NetworkRegistry(
      opts.networks,
      opts.poolFactory ?? managedPoolFactory({ metrics, logger, describe: describeMethod }),
    )
    const charger = new Charger(limiter, metrics)
    const unwatchDatabase = watchDatabase(storage, logger, metrics)
    const auth = new AuthService(new AuthStore(storage.db), {
      operatorEmails: [...(opts.operatorEmails ?? []), ...(env.HALYARD_OPERATOR_EMAILS ?? [])],
      adminToken: opts.adminToken,
      knownMethod: isKnownMethod,
      staleMs: env.HALYARD_KEY_STALE_MS,
      waitMs: env.HALYARD_DB_TIMEOUT_MS ?? DEFAULT_DB_TIMEOUT_MS,
    })
    const fwd = forwarded(env.HALYARD_TRUSTED_PROXIES)
    // Set from the listener below when HALYARD_PUBLIC_URL is unset (dev mode, tests on port 0).
    let publicOrigin = env.HALYARD_PUBLIC_URL
    const ctx: AppContext = {
      env,
      devMode: opts.devMode ?? false,
      logger,
      storage,
      auth,
      limiter,
      networks,
      metrics,
      charger,
      secretKey: opts.secretKey,
      redis,
      forwarded: fwd,
      publicOrigin: () => {
        if (publicOrigin === undefined) throw new Error('the public origin is known once the server listens')
        return publicOrigin
      },
    }

    const app = buildApp({
      logger,
      auth,
      charger,
      metrics,
      networks,
      workerIndex: opts.workerIndex,
      requestTimeoutMs: env.HALYARD_REQUEST_TIMEOUT,
      fastLane: env.HALYARD_FAST_LANE === '1',
      forwarded: fwd,
    })
    const checks: ReadinessCheck[] = []
    if (redis) {
      const r = redis
      checks.push({ name: 'redis', check: async () => void (await r.ping()) })
    }
    registerOpsRoutes(app, { db: storage.db, networks, metrics, checks })
    if (opts.adminToken) registerAdminRoutes(app, auth, opts.adminToken)
    const starters: (() => Promise<void> | void)[] = []
    const services = await registerFeatures({
      app,
      ctx,
      addTask: (t) => tasks.push(t),
      onStart: (fn) => starters.push(fn),
    })
    if (opts.adminToken)
      registerLoginLinkAdminRoute(
        app,
        auth,
        services.dashboard,
        makeAdminGuard(opts.adminToken),
        ctx.publicOrigin,
      )
    // /ready reads `checks` per request: the indexer's lag/stuck checks join once it exists.
    checks.push(...services.indexer.readinessChecks())
    checks.push(...services.sponsorship.readinessChecks())
    checks.push(...services.bundler.readinessChecks())
    checks.push(...services.webhooks.readinessChecks())
    if (opts.backgroundJobs !== false) {
      if (opts.workerIndex !== undefined)
        logger.info({ worker: opts.workerIndex }, 'this worker runs the background jobs')
      for (const start of starters) await start()
    }

    const host = opts.host ?? env.HALYARD_HOST
    await app.listen({ host, port: opts.port ?? env.HALYARD_PORT })
    const addr = app.server.address()
    const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? env.HALYARD_PORT)
    const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host
    const origin = `http://${shownHost}:${port}`
    publicOrigin ??= origin

    let closed = false
    return {
      app,
      ctx,
      services,
      origin,
      publicOrigin,
      baseUrl: `${origin}/v1`,
      wsOrigin: `ws://${shownHost}:${port}`,
      async close() {
        if (closed) return
        closed = true
        await app.close()
        for (const t of tasks.reverse()) {
          await t.stop().catch((err) => logger.error({ err, task: t.name }, 'background task failed to stop'))
        }
        await networks?.close()
        await limiter?.close()
        redis?.disconnect()
        unwatchDatabase()
        if (ownsStorage) await storage.close()
      },
    }
  } catch (err) {
    for (const t of tasks.reverse()) await t.stop().catch(() => {})
    await networks?.close()
    await limiter?.close()
    redis?.disconnect()
    if (ownsStorage) await storage.close()
    throw err
  }
}

export function randomToken(): string {
  return randomBytes(24).toString('base64url')
}

/** The Redis limiter with its outage policy (docs/dependency-failures.md), once Redis answered or its wait ran out. */
async function redisLimiter(
  env: Env,
  url: string,
  logger: Logger,
  metrics: Metrics,
): Promise<RedisRateLimiter> {
  const l = new RedisRateLimiter(url, undefined, {
    timeoutMs: env.HALYARD_REDIS_TIMEOUT,
    fallback: env.HALYARD_REDIS_FALLBACK,
    processes: env.HALYARD_REDIS_FALLBACK_INSTANCES * env.HALYARD_WORKERS,
    logger,
    onState: (up) => metrics.limiterRedisUp.set(up ? 1 : 0),
    onFallback: (outcome) => metrics.limiterFallback.inc({ outcome }),
  })
  metrics.limiterRedisUp.set(1)
  await l.ready()
  return l
}
