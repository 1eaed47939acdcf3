import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { sql } from 'kysely'
import pg from 'pg'
import type { Logger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'

/** This process's name in delivery attempts: HALYARD_INSTANCE_ID, else hostname:pid (unique per cluster worker). */
export function instanceId(configured: string | undefined): string {
  return configured ?? `${hostname()}:${process.pid}`
}

/** Instances in this process sharing one storage object (PGlite is single-process; tests). */
const inProcess = new WeakMap<object, Set<CrossWake>>()

const RECONNECT_MAX_MS = 5_000
const CONNECT_TIMEOUT_MS = 10_000

/**
 * Wakes the delivery workers of every instance sharing the database when work appears here
 * that another may take first: events the matcher committed without leasing them, an API
 * redeliver or test event, a webhook set active again, lanes given back at shutdown.
 * PostgreSQL: NOTIFY on a channel named after the schema, LISTENed on one dedicated
 * connection per instance (a pooled connection cannot hold a LISTEN). The payload is a random
 * token of the sender, so an instance ignores its own notices (it already woke itself), even
 * where two share an instance id (in one process, or one HALYARD_INSTANCE_ID for all).
 * PGlite has one process: instances there share the storage object and wake each other
 * directly. A lost notice (listener reconnecting) costs at most one poll interval, and the
 * listener wakes its worker once it is back, so nothing committed meanwhile waits longer.
 */
export class CrossWake {
  private client: pg.Client | undefined
  private channel: string | undefined
  private stopped = false
  private sending = false
  private again = false
  private reconnects = 0
  private timer: NodeJS.Timeout | undefined
  /** Marks this object's own notices. */
  private readonly token = randomBytes(9).toString('base64url')

  constructor(
    private readonly storage: Storage,
    /** DATABASE_URL: where the listener connects (PostgreSQL only). */
    private readonly databaseUrl: string | undefined,
    private readonly onWake: () => void,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const peers = inProcess.get(this.storage.db) ?? new Set<CrossWake>()
    inProcess.set(this.storage.db, peers)
    peers.add(this)
    if (this.storage.kind !== 'postgres' || !this.databaseUrl) return
    // Per schema: tests (and operators) may run several Halyards in one database, one schema each.
    const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(this.storage.db)
    this.channel = `halyard_webhooks_${rows[0]?.s ?? 'public'}`.slice(0, 63)
    await this.connect()
  }

  /** Wakes the other instances (coalesced: one notice in flight, one more queued at most). */
  notify(): void {
    for (const peer of inProcess.get(this.storage.db) ?? []) {
      if (peer !== this) peer.onWake()
    }
    if (this.channel === undefined || this.stopped) return
    if (this.sending) {
      this.again = true
      return
    }
    this.sending = true
    void sql`select pg_notify(${this.channel}, ${this.token})`
      .execute(this.storage.db)
      .catch((err) => this.logger.debug({ err: (err as Error).message }, 'webhook wake notice failed'))
      .finally(() => {
        this.sending = false
        if (this.again) {
          this.again = false
          this.notify()
        }
      })
  }

  /**
   * Stops listening, after one last notice: lanes this worker gave back while stopping go to
   * the other instances now, not at their next poll.
   */
  async stop(): Promise<void> {
    if (this.channel !== undefined && !this.stopped)
      await sql`select pg_notify(${this.channel}, ${this.token})`.execute(this.storage.db).catch(() => {})
    for (const peer of inProcess.get(this.storage.db) ?? []) if (peer !== this) peer.onWake()
    this.stopped = true
    inProcess.get(this.storage.db)?.delete(this)
    clearTimeout(this.timer)
    const c = this.client
    this.client = undefined
    await c?.end().catch(() => {})
  }

  private async connect(): Promise<void> {
    const channel = this.channel as string
    // Bounded connect: a server that never answers would otherwise hold start() (and the
    // delivery worker waiting on it, and shutdown) forever. Keepalive: a LISTEN connection
    // idles, and one dropped silently (NAT, failover) must still end in 'error' and a reconnect.
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    })
    client.on('notification', (msg) => {
      if (msg.channel === channel && msg.payload !== this.token) this.onWake()
    })
    client.on('error', (err) => this.lost(client, err))
    client.on('end', () => this.lost(client, undefined))
    this.client = client
    try {
      await client.connect()
      await client.query(`listen "${channel.replaceAll('"', '""')}"`)
    } catch (err) {
      this.lost(client, err as Error)
      return
    }
    if (this.stopped) {
      await client.end().catch(() => {})
      return
    }
    if (this.reconnects > 0) this.onWake()
    this.reconnects = 0
  }

  private lost(client: pg.Client, err: Error | undefined): void {
    // Only the current client's first failure reconnects ('error' and 'end' may both come).
    if (this.stopped || this.client !== client) return
    this.client = undefined
    client.removeAllListeners('end')
    client.end().catch(() => {})
    this.reconnects++
    const delay = Math.min(RECONNECT_MAX_MS, 100 * 2 ** this.reconnects)
    this.logger.warn({ err: err?.message, delay }, 'webhook wake listener lost its connection; reconnecting')
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.connect()
    }, delay)
  }
}
