/**
 * A Redis of the test's own (its own port, no persistence), for faults on Redis: kill it,
 * freeze it, start it again on the same port. Never the machine's shared Redis.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import net from 'node:net'
import { until } from '../helpers/until.ts'
import { freePort } from './harness.ts'

/** Why a private Redis cannot run here; undefined when it can. */
export function privateRedisSkipReason(): string | undefined {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return undefined
  } catch {
    return 'skipped: no redis-server binary on PATH'
  }
}

export interface PrivateRedis {
  readonly url: string
  readonly port: number
  pid(): number
  /** SIGKILL; `start()` brings it back empty on the same port. */
  kill(): Promise<void>
  start(): Promise<void>
  freeze(): void
  thaw(): void
  stop(): Promise<void>
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    const c = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    )
    child = c
    await until('private Redis to listen', () => {
      if (c.exitCode !== null) throw new Error(`redis-server exited with ${c.exitCode}`)
      return new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.end()
          resolve(true)
        })
        s.on('error', () => resolve(false))
      })
    })
  }
  const kill = async () => {
    const c = child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise((resolve) => c.once('exit', resolve))
    c.kill('SIGKILL')
    await exited
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: () => child?.pid ?? 0,
    kill,
    start,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
    async stop() {
      child?.kill('SIGCONT')
      await kill()
    },
  }
}
