/**
 * A PostgreSQL of the test's own (initdb into a temp dir, its own port), so faults can be
 * injected — restart, terminate backends, freeze — without touching a shared server. Run as root,
 * initdb and postgres run as the `postgres` user (PostgreSQL refuses root), on a dir owned by it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { until } from '../helpers/until.ts'
import { freePort } from './harness.ts'

interface Binaries {
  initdb: string
  postgres: string
}

/** The newest installed PostgreSQL's binaries (Debian layout), or undefined. */
function binaries(): Binaries | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a))
  const v = versions[0]
  if (!v) return undefined
  return { initdb: path.join(root, v, 'bin', 'initdb'), postgres: path.join(root, v, 'bin', 'postgres') }
}

/** The uid/gid to run PostgreSQL as: ours, or the `postgres` user's when we are root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const out = execFileSync('id', ['-u', 'postgres']).toString().trim()
  const gid = execFileSync('id', ['-g', 'postgres']).toString().trim()
  return { uid: Number(out), gid: Number(gid) }
}

/** Why a private PostgreSQL cannot run here; undefined when it can. */
export function privatePostgresSkipReason(): string | undefined {
  if (!binaries()) return 'skipped: no PostgreSQL binaries under /usr/lib/postgresql/*/bin'
  if (process.getuid?.() === 0) {
    try {
      runAs()
    } catch {
      return 'skipped: running as root and there is no postgres user to run PostgreSQL as'
    }
  }
  return undefined
}

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  readonly url: string
  readonly port: number
  /** The postmaster's pid (changes on restart). */
  pid(): number
  /** Runs one statement on a fresh admin connection. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>
  /** Fast shutdown (SIGINT: sessions terminated) and start again on the same port and data. */
  restart(): Promise<{ downAt: number; upAt: number }>
  /** SIGSTOP to the postmaster and every backend: connections hang, nothing answers. */
  freeze(): void
  /** SIGCONT to the same processes. */
  thaw(): void
  stop(): Promise<void>
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binaries()
  if (!bin) throw new Error('no PostgreSQL binaries')
  const as = runAs()
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-fault-pg-'))
  if (as) chownSync(dir, as.uid, as.gid)
  const data = path.join(dir, 'data')
  execFileSync(bin.initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], {
    stdio: 'ignore',
    ...(as ?? {}),
  })
  const port = await freePort()
  let child: ChildProcess | undefined
  let frozen: number[] = []

  const start = async () => {
    const c = spawn(
      bin.postgres,
      ['-D', data, '-p', String(port), '-k', '', '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
      { stdio: 'ignore', ...(as ?? {}) },
    )
    child = c
    await until(
      'private PostgreSQL to accept connections',
      async () => {
        if (c.exitCode !== null) throw new Error(`postgres exited with ${c.exitCode}`)
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
        client.on('error', () => {})
        try {
          await client.connect()
          await client.query('select 1')
          return true
        } catch {
          return false
        } finally {
          await client.end().catch(() => {})
        }
      },
      30_000,
    )
  }
  const stopChild = async () => {
    const c = child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise((resolve) => c.once('exit', resolve))
    c.kill('SIGINT')
    await exited
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  await start()

  /** The postmaster and its children (backends, checkpointer, …), from /proc. */
  const processes = (): number[] => {
    const root = child?.pid
    if (!root) return []
    const out = [root]
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        if (ppid === root) out.push(Number(entry))
      } catch {
        // gone meanwhile
      }
    }
    return out
  }

  const thaw = () => {
    for (const p of frozen) {
      try {
        process.kill(p, 'SIGCONT')
      } catch {
        // exited
      }
    }
    frozen = []
  }

  return {
    url,
    port,
    pid: () => child?.pid ?? 0,
    async query(text, params) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
      client.on('error', () => {})
      await client.connect()
      try {
        return (await client.query(text, params)).rows
      } finally {
        await client.end().catch(() => {})
      }
    },
    async restart() {
      const downAt = Date.now()
      await stopChild()
      await start()
      return { downAt, upAt: Date.now() }
    },
    freeze() {
      frozen = processes()
      for (const p of frozen) process.kill(p, 'SIGSTOP')
    },
    thaw,
    async stop() {
      thaw()
      await stopChild()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
