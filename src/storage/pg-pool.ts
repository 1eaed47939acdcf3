import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import pg from 'pg'
import { z } from 'zod'

/**
 * The PostgreSQL pool behind Kysely, with what a dependency that fails needs (docs/dependency-failures.md):
 *
 * - every client has an `error` listener from the moment it connects: pg-pool only listens on
 *   idle clients, so a checked-out client whose server went away (a restart, a failover,
 *   `pg_terminate_backend`) emitted an unhandled `error` and ended the process;
 * - every wait has a deadline: a connection within `timeoutMs`, and each query within
 *   `timeoutMs`. A query past its deadline destroys its connection (what was sent may still
 *   run, but a transaction left open dies with the session), so the client is never reused
 *   half-way through a conversation;
 * - a session's loss is announced (`sessionLost`), so a holder of a session advisory lock
 *   knows it no longer holds it;
 * - the database's state changes (down, up) are reported once each (`DatabaseHealth`), not
 *   once per failed request.
 */

/** A database wait that ran out of time or found no server: the caller answers 503, not 500. */
export class DatabaseUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'DatabaseUnavailableError'
  }
}

export const DEFAULT_DB_TIMEOUT_MS = 5_000

/** Environment fields (validated with the rest in src/config/env.ts). */
export const databaseEnvShape = {
  HALYARD_DB_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .optional()
    .describe('Deadline in milliseconds for a PostgreSQL connection and for each query (default 5000 ms).'),
}

/** HALYARD_DB_TIMEOUT_MS, or the default; read here rather than threaded through every openStorage caller. */
export function databaseTimeoutMs(source: NodeJS.ProcessEnv = process.env): number {
  const raw = source.HALYARD_DB_TIMEOUT_MS
  if (raw === undefined || raw === '') return DEFAULT_DB_TIMEOUT_MS
  return (
    z.object(databaseEnvShape).parse({ HALYARD_DB_TIMEOUT_MS: raw }).HALYARD_DB_TIMEOUT_MS ??
    DEFAULT_DB_TIMEOUT_MS
  )
}

export type DatabaseState = 'up' | 'down'

/**
 * Up or down, from what queries saw: down at the first wait that failed for want of a server,
 * up at the next one that succeeded. Listeners hear each change once (one log line per outage).
 */
export class DatabaseHealth {
  private current: DatabaseState = 'up'
  private since = Date.now()
  private readonly listeners = new Set<(state: DatabaseState, err?: Error) => void>()
  /** Database waits that failed for want of a server (a counter: the `/metrics` series). */
  failures = 0

  get state(): DatabaseState {
    return this.current
  }

  /** Milliseconds since the last change. */
  age(now = Date.now()): number {
    return now - this.since
  }

  onChange(listener: (state: DatabaseState, err?: Error) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  succeeded(): void {
    if (this.current === 'up') return
    this.set('up')
  }

  failed(err: Error): void {
    this.failures++
    if (this.current === 'down') return
    this.set('down', err)
  }

  private set(state: DatabaseState, err?: Error): void {
    this.current = state
    this.since = Date.now()
    for (const l of this.listeners) l(state, err)
  }
}

/** How many `withoutDeadline` calls are running in this process. */
let unbounded = 0

/**
 * Work that may legitimately outlast the deadline (migrations): while it runs, this process's
 * queries wait as long as they take. A counter rather than an AsyncLocalStorage scope: on
 * Node 20 and 22 one `run` of any AsyncLocalStorage turns on promise hooks for the rest of the
 * process, a cost every request's promises then paid (docs/benchmarks.md). Migrations run
 * before an instance serves anything, so nothing else loses its deadline meanwhile.
 */
export async function withoutDeadline<T>(fn: () => Promise<T>): Promise<T> {
  unbounded++
  try {
    return await fn()
  } finally {
    unbounded--
  }
}

/**
 * Errors that mean "no server to talk to" rather than "the query was wrong": connection-level
 * SQLSTATE classes (08: connection exception; 57P01–57P03: admin/crash shutdown, cannot connect
 * now; 53300: too many connections), socket errors without a SQLSTATE, and a store already
 * closed (a request still in flight while the process shuts down).
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true
  const e = err as { code?: unknown; message?: unknown }
  const code = typeof e?.code === 'string' ? e.code : ''
  if (/^08/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300')
    return true
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code))
    return true
  const message = typeof e?.message === 'string' ? e.message : ''
  return /Connection terminated|not queryable|timeout exceeded when trying to connect|Client was closed|PGlite is closed|driver has already been destroyed/.test(
    message,
  )
}

type PgClient = pg.PoolClient & { processID?: number | null; connection?: { stream?: { destroy(): void } } }

export interface HardenedPool {
  /** What Kysely's PostgresDialect is given. */
  readonly pool: PostgresPool
  readonly health: DatabaseHealth
  /**
   * A signal aborted when the server session `pid` (`pg_backend_pid()`) is lost; already
   * aborted when no live client of this pool has that session.
   */
  sessionLost(pid: number): AbortSignal
}

export function hardenedPool(opts: {
  connectionString: string
  max: number
  timeoutMs: number
  options?: string
}): HardenedPool {
  const health = new DatabaseHealth()
  const timeoutMs = opts.timeoutMs
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    connectionTimeoutMillis: timeoutMs,
    // A server that vanished without a FIN (a partition, a dead host) is found by the kernel.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(opts.options ? { options: opts.options } : {}),
  })
  // An idle client losing its server is dropped by the pool; the next query reconnects.
  pool.on('error', () => {})
  const sessions = new Map<number, { client: PgClient; lost: AbortController }>()
  pool.on('connect', (c) => {
    const client = c as PgClient
    const pid = client.processID ?? undefined
    const lost = new AbortController()
    if (pid !== undefined) sessions.set(pid, { client, lost })
    const onLost = (err?: Error) => {
      if (lost.signal.aborted) return
      lost.abort(err ?? new Error('database connection ended'))
      if (pid !== undefined && sessions.get(pid)?.client === client) sessions.delete(pid)
    }
    // Checked out or idle, a client whose server goes away must not crash the process. A lost
    // session alone (one backend terminated) is not an outage: waits that fail say when it is.
    client.on('error', (err) => onLost(err))
    client.on('end', () => onLost())
  })

  const connect = async (): Promise<PostgresPoolClient> => {
    let client: PgClient
    try {
      client = (await pool.connect()) as PgClient
    } catch (err) {
      const e = new DatabaseUnavailableError(`database connection failed: ${(err as Error).message}`, {
        cause: err,
      })
      health.failed(e)
      throw e
    }
    let broken: Error | undefined
    const query = async <R>(
      text: string,
      params: ReadonlyArray<unknown>,
    ): Promise<PostgresQueryResult<R>> => {
      if (unbounded > 0) return run<R>(text, params)
      let timer: NodeJS.Timeout | undefined
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          broken = new DatabaseUnavailableError(`database did not answer within ${timeoutMs} ms`)
          health.failed(broken)
          // The conversation is out of step now: the connection goes, never back to the pool.
          client.connection?.stream?.destroy()
          reject(broken)
        }, timeoutMs)
      })
      try {
        return await Promise.race([run<R>(text, params), deadline])
      } finally {
        clearTimeout(timer)
      }
    }
    const run = async <R>(text: string, params: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> => {
      try {
        const r = (await client.query(text, params as unknown[])) as unknown as PostgresQueryResult<R>
        health.succeeded()
        return r
      } catch (err) {
        if (broken) throw broken
        if (!isUnavailable(err)) throw err
        broken = new DatabaseUnavailableError(`database unavailable: ${(err as Error).message}`, {
          cause: err,
        })
        health.failed(broken)
        throw broken
      }
    }
    return {
      query: query as PostgresPoolClient['query'],
      // A client that failed for want of a server is destroyed, not handed out again.
      release: () => client.release(broken),
    }
  }

  return {
    pool: { connect, end: () => pool.end() },
    health,
    sessionLost(pid) {
      const s = sessions.get(pid)
      if (s) return s.lost.signal
      return AbortSignal.abort(new Error(`no live database session ${pid}`))
    },
  }
}
