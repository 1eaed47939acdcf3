import { type ChildProcess, execFile, spawn } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'

const BIN = path.resolve(import.meta.dirname, '../../bin/halyard.mjs')
const execFileP = promisify(execFile)

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs one `halyard …` command to completion (a real child process). */
export async function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [BIN, ...args], {
      env: { ...process.env, HALYARD_LOG_LEVEL: 'warn', ...env },
      timeout: 60_000,
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string }
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

export interface ServerChild {
  child: ChildProcess
  output(): string
  /** Resolves with the first match of `pattern` in stdout+stderr, rejects if the child exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  /** Sends a signal and resolves with the exit code/signal. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts a long-running `halyard …` (dev or serve) as a real child process. */
export function spawnHalyard(args: string[], env: Record<string, string | undefined>): ServerChild {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, HALYARD_LOG_LEVEL: 'warn', HALYARD_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const listeners = new Set<() => void>()
  const onData = (d: Buffer) => {
    out += d.toString()
    for (const l of listeners) l()
  }
  child.stdout?.on('data', onData)
  child.stderr?.on('data', onData)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return {
    child,
    output: () => out,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern)
          if (m) {
            done()
            resolve(m)
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`timed out waiting for ${pattern}; output:\n${out}`))
        }, timeoutMs)
        const done = () => {
          clearTimeout(timer)
          listeners.delete(check)
        }
        listeners.add(check)
        void exited.then((code) => {
          if (!listeners.has(check)) return
          done()
          reject(new Error(`halyard exited (${code}) before ${pattern}; output:\n${out}`))
        })
        check()
      })
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}
