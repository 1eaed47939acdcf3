import { sql } from 'kysely'
import { BackgroundLoop } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { DB, Storage } from './database.ts'

/** Never aborted: PGlite has one process and no sessions to lose. */
const NEVER = new AbortController().signal

/**
 * Takes the session advisory lock `key` on `conn` if free (hashed with the schema, so tenants
 * sharing a database do not exclude each other); the lock stays until released or the session ends.
 */
export async function tryAdvisoryLock(conn: DB, key: string): Promise<{ ok: boolean; pid: number }> {
  const got = await sql<{ ok: boolean; pid: number }>`
    select pg_try_advisory_lock(hashtext(current_schema() || ':' || ${key})) as ok,
           pg_backend_pid() as pid`.execute(conn)
  const row = got.rows[0]
  return { ok: row?.ok === true, pid: row?.pid ?? 0 }
}

export async function releaseAdvisoryLock(conn: DB, key: string): Promise<void> {
  await sql`select pg_advisory_unlock(hashtext(current_schema() || ':' || ${key}))`.execute(conn)
}

/**
 * Runs `fn` on one connection while holding the session advisory lock `key`; `'busy'` when
 * another session holds it. `lost` is aborted when the connection goes (a PostgreSQL restart, a
 * failover, `pg_terminate_backend`): the lock went with it, another instance may take it now,
 * and `fn` must stop and return; the caller contends again after its backoff. The broken
 * connection is released to the pool, which discards it.
 *
 * On PGlite (one process, no other instance) `fn` runs on the database itself, without a lock.
 */
export async function withSessionLock<T>(
  storage: Storage,
  key: string,
  fn: (conn: DB, lost: AbortSignal) => Promise<T>,
): Promise<T | 'busy'> {
  if (storage.kind !== 'postgres' || !storage.sessionLost) return fn(storage.db, NEVER)
  const watch = storage.sessionLost
  return storage.db.connection().execute(async (conn) => {
    const got = await tryAdvisoryLock(conn, key)
    if (!got.ok) return 'busy' as const
    const lost = watch(got.pid)
    try {
      return await fn(conn, lost)
    } finally {
      if (!lost.aborted) await releaseAdvisoryLock(conn, key).catch(() => {})
    }
  })
}

/** What a leader's turn gets while it holds the lock. */
export interface LeaderTurn {
  /** The connection holding the lock (PGlite: the database). */
  conn: DB
  /** Aborts when the loop stops or the lock's session is lost: the turn must end then. */
  ended: AbortSignal
  /** Aborts when the lock's session is lost (the lock went with it). */
  lost: AbortSignal
  /** A pause inside the turn: ends early on the loop's wake(), a stop, or the lock lost. */
  sleep(ms: number): Promise<void>
}

export interface LeaderLoopOptions {
  storage: Storage
  /** The advisory lock's name: one leader per key (and schema). */
  key: string
  /** Names the worker in its log lines ("indexer", "bundler builder", …). */
  name: string
  /** Logged when an attempt or turn fails (the loop retries after `retryMs`). */
  failure: string
  logger: Logger
  /** The pause between attempts: after a turn ends, a failure, or finding another leader. */
  retryMs: number
  /** The leader's work: returns when `ended` aborts, or throws to give the lock up. */
  lead: (turn: LeaderTurn) => Promise<void>
  /** Before each attempt at the lock (work every instance does, leader or not). */
  beforeAttempt?: () => Promise<void>
  /** Another instance leads now. */
  onBusy?: () => void
  /** After each attempt, whether it led, found another leader, or failed. */
  afterAttempt?: () => void
}

/**
 * A background loop that keeps contending for a leader lock and, while it holds it, runs `lead`
 * (docs/dependency-failures.md): on PostgreSQL one instance at a time leads, and when its
 * session is lost (a restart, a failover) the turn ends and another instance takes over; on
 * PGlite the one process always leads.
 */
export function leaderLoop(opts: LeaderLoopOptions): BackgroundLoop {
  const { storage, logger } = opts
  const loop: BackgroundLoop = new BackgroundLoop({
    failure: opts.failure,
    logger,
    retryMs: () => opts.retryMs,
    round: async (stop) => {
      try {
        await opts.beforeAttempt?.()
        const got = await withSessionLock(storage, opts.key, async (conn, lost) => {
          if (storage.kind === 'postgres') logger.info(`${opts.name} lock acquired`)
          // A turn asleep hears of the loss at once, not at the end of its nap.
          const onLost = () => loop.wake()
          lost.addEventListener('abort', onLost, { once: true })
          const ended = AbortSignal.any([stop, lost])
          try {
            await opts.lead({
              conn,
              ended,
              lost,
              sleep: (ms) => (ended.aborted ? Promise.resolve() : loop.sleep(ms)),
            })
          } finally {
            lost.removeEventListener('abort', onLost)
          }
          if (lost.aborted && !stop.aborted)
            logger.warn(`${opts.name} lost its database session; contending for the lock again`)
        })
        if (got === 'busy') opts.onBusy?.()
      } finally {
        opts.afterAttempt?.()
      }
      return opts.retryMs
    },
  })
  return loop
}
