import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'

/**
 * A Redis of the test's own (never the machine's shared one): a child `redis-server` on a free
 * port with no persistence, which a fault test may kill, restart, freeze and thaw. Killing it
 * loses its data, as a real Redis without persistence would.
 */
export interface PrivateRedis {
  readonly port: number
  readonly url: string
  /** SIGKILL: the process and its data are gone. */
  kill(): Promise<void>
  /** A fresh server on the same port (empty). */
  restart(): Promise<void>
  /** SIGSTOP / SIGCONT: connections stay open, nothing is answered meanwhile. */
  freeze(): void
  thaw(): void
  /** A client for the test's own reads (one per call; disconnected by `stop`). */
  client(): Redis
  stop(): Promise<void>
}

/** Why fault tests needing a private Redis cannot run here; undefined when they can. */
export function privateRedisSkipReason(): string | undefined {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return undefined
  } catch {
    return 'skipped: redis-server not installed'
  }
}

async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const { port } = srv.address() as { port: number }
  await new Promise((resolve) => srv.close(resolve))
  return port
}

async function answers(port: number, ms: number): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 })
    probe.on('error', () => {})
    try {
      await probe.connect()
      if ((await probe.ping()) === 'PONG') return
    } catch {
      if (Date.now() > end) throw new Error(`private redis on port ${port} did not answer within ${ms} ms`)
      await new Promise((r) => setTimeout(r, 30))
    } finally {
      probe.disconnect()
    }
  }
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-redis-'))
  const clients: Redis[] = []
  let child: ChildProcess | undefined

  const launch = async () => {
    const c = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    )
    child = c
    await answers(port, 10_000)
  }
  const killChild = async () => {
    const c = child
    child = undefined
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise((resolve) => c.once('exit', resolve))
    // A frozen process takes SIGKILL too; SIGCONT first only so it exits at once everywhere.
    c.kill('SIGCONT')
    c.kill('SIGKILL')
    await exited
  }
  await launch()

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: killChild,
    restart: launch,
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    client() {
      const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 })
      r.on('error', () => {})
      clients.push(r)
      return r
    },
    async stop() {
      for (const c of clients.splice(0)) c.disconnect()
      await killChild()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
