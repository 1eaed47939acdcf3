/**
 * Shared pieces of the fault suite (docs/dependency-failures.md, "Running the fault suite"):
 * Halyard as a child process (`halyard serve`, so a crash is a real exit), keys made directly in
 * its database, a table of what each fault did. Private servers: private-postgres.ts,
 * private-redis.ts; the load: load.ts.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generateApiKey } from '../../src/auth/key-format.ts'
import { AuthService } from '../../src/auth/service.ts'
import { AuthStore } from '../../src/auth/store.ts'
import { openStorage } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { type ServerChild, spawnHalyard } from '../helpers/cli.ts'
import { until } from '../helpers/until.ts'

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      s.close(() => resolve(port))
    })
  })
}

export interface HalyardProcess {
  readonly server: ServerChild
  /** http://127.0.0.1:PORT/v1 */
  readonly baseUrl: string
  readonly origin: string
  alive(): boolean
  /** How the process ended, when it did ("exit 1", "SIGKILL"). */
  exit(): string | undefined
  /** SIGTERM (a clean stop flushes usage) and wait. */
  stop(): Promise<void>
}

/**
 * `halyard serve` with one EVM network on `upstreamUrl`, in a child process, with `env` on top
 * (DATABASE_URL, REDIS_URL, HALYARD_DB_TIMEOUT_MS…). Resolves once it listens.
 */
export async function startHalyardProcess(opts: {
  upstreamUrl: string
  env: Record<string, string>
}): Promise<HalyardProcess> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-fault-'))
  const config = path.join(dir, 'halyard.yaml')
  writeFileSync(
    config,
    `networks:\n  - chain: ethereum\n    network: devnet\n    chainId: 31337\n    upstreams:\n      - url: ${opts.upstreamUrl}\n`,
  )
  const server = spawnHalyard(['serve', '--config', config], {
    HALYARD_DATA_DIR: dir,
    HALYARD_SECRET_KEY: randomBytes(32).toString('hex'),
    HALYARD_PUBLIC_URL: 'https://halyard.example.com',
    ...opts.env,
  })
  const [, baseUrl] = await server.waitFor(/serving 1 network\(s\) at (\S+)/)
  const base = baseUrl as string
  return {
    server,
    baseUrl: base,
    origin: base.replace(/\/v1$/, ''),
    alive: () => server.child.exitCode === null && server.child.signalCode === null,
    exit() {
      const c = server.child
      if (c.exitCode !== null) return `exit ${c.exitCode}`
      if (c.signalCode !== null) return c.signalCode
      return undefined
    },
    async stop() {
      await server.stop('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface FaultKeys {
  keys: string[]
  accountIds: string[]
}

/** Accounts (enterprise: no limiter in the way) with one key each, written to the database at `url`. */
export async function createFaultKeys(url: string, count: number): Promise<FaultKeys> {
  const storage = await openStorage({ databaseUrl: url })
  try {
    await migrate(storage.db)
    const auth = new AuthService(new AuthStore(storage.db))
    const keys: string[] = []
    const accountIds: string[] = []
    for (let i = 0; i < count; i++) {
      const email = `fault-${i}-${randomBytes(4).toString('hex')}@test.local`
      const account = await auth.createAccount(email, 'enterprise')
      const { key } = await auth.createKey({ accountEmail: email, env: 'test' })
      keys.push(key)
      accountIds.push(account.id)
    }
    return { keys, accountIds }
  } finally {
    await storage.close()
  }
}

/** A well-formed key no database knows (the shape of a test key, random). */
export function unknownKey(): string {
  return generateApiKey('test')
}

/** Milliseconds from `since` until `probe` first holds (polled every 20 ms), or undefined after `ms`. */
export async function timeUntil(
  since: number,
  probe: () => Promise<boolean>,
  ms = 30_000,
): Promise<number | undefined> {
  try {
    await until(
      'recovery',
      async () => {
        try {
          return await probe()
        } catch {
          return false
        }
      },
      ms,
    )
    return Date.now() - since
  } catch {
    return undefined
  }
}

export interface FaultRow {
  fault: string
  /** What clients saw: status counts, slowest answer. */
  seen: string
  lost: number | string
  duplicated: number | string
  /** From the dependency's return to Halyard serving a request that needs it (measured). */
  recovery: string
  process: string
}

/** Prints the rows as a Markdown table (the suite's report; timings measured, never asserted). */
export function printFaultTable(title: string, rows: readonly FaultRow[]): void {
  const head = ['fault', 'client-visible effect', 'lost', 'duplicated', 'recovery', 'process']
  const lines = rows.map((r) => [
    r.fault,
    r.seen,
    String(r.lost),
    String(r.duplicated),
    r.recovery,
    r.process,
  ])
  const out = [
    `\n${title}`,
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...lines.map((l) => `| ${l.join(' | ')} |`),
  ]
  console.log(out.join('\n'))
}
