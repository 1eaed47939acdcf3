import type { PGlite } from '@electric-sql/pglite'
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'

/**
 * Kysely dialect over PGlite. PGlite is one session, so the driver hands out that session
 * to one Kysely connection at a time: a transaction must never interleave with another
 * caller's statements.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}
  createAdapter() {
    return new PostgresAdapter()
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite)
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db)
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler()
  }
}

class PGliteDriver implements Driver {
  private queue: Promise<void> = Promise.resolve()
  private readonly connection: PGliteConnection

  constructor(private readonly pglite: PGlite) {
    this.connection = new PGliteConnection(pglite)
  }

  async init(): Promise<void> {
    await this.pglite.waitReady
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void
    const next = new Promise<void>((resolve) => {
      release = resolve
    })
    const previous = this.queue
    this.queue = previous.then(() => next)
    await previous
    this.connection.release = release
    return this.connection
  }

  async beginTransaction(conn: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : ''
    await (conn as PGliteConnection).exec(`begin${level}`)
  }
  async commitTransaction(conn: DatabaseConnection): Promise<void> {
    await (conn as PGliteConnection).exec('commit')
  }
  async rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    await (conn as PGliteConnection).exec('rollback')
  }
  async releaseConnection(conn: DatabaseConnection): Promise<void> {
    const c = conn as PGliteConnection
    const release = c.release
    c.release = undefined
    release?.()
  }
  async destroy(): Promise<void> {
    await this.queue
    if (!this.pglite.closed) await this.pglite.close()
  }
}

class PGliteConnection implements DatabaseConnection {
  release: (() => void) | undefined
  constructor(private readonly pglite: PGlite) {}

  async exec(sql: string): Promise<void> {
    await this.pglite.exec(sql)
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.pglite.query<R>(query.sql, query.parameters.map(toParam))
    return {
      rows: result.rows,
      ...(result.affectedRows !== undefined ? { numAffectedRows: BigInt(result.affectedRows) } : {}),
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported by PGlite; fail loudly.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not support streaming queries')
  }
}

function toParam(v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() : v
}
