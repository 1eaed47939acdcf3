/**
 * Process plumbing for bench/footprint.ts: start a command, wait for a line that says it is
 * ready (timing from spawn), read RSS from /proc, find a process's descendants (anvil under
 * Halyard), stop it and wait for the exit. Linux only (/proc), like the machine it runs on.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { sleep } from '../../src/common/time.ts'

const execFileP = promisify(execFile)

/** Resident set size of one process, MB; undefined once it has gone. */
export function rssMb(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

function childrenOf(pid: number): number[] {
  try {
    const out: number[] = []
    for (const tid of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
      if (tid) out.push(Number(tid))
    }
    return out
  } catch {
    return []
  }
}

/** Every descendant's pid with its command name (`comm`). */
export function descendants(pid: number): { pid: number; comm: string }[] {
  const out: { pid: number; comm: string }[] = []
  const walk = (p: number) => {
    for (const c of childrenOf(p)) {
      let comm = '?'
      try {
        comm = readFileSync(`/proc/${c}/comm`, 'utf8').trim()
      } catch {}
      out.push({ pid: c, comm })
      walk(c)
    }
  }
  walk(pid)
  return out
}

export interface Started {
  child: ChildProcess
  pid: number
  /** Milliseconds from spawn until `readyWhen` matched a line. */
  readyMs: number
  /** Every stdout/stderr line so far (the banner, errors). */
  lines: string[]
  /** The first match of `readyWhen`. */
  match: RegExpExecArray
}

/** Spawns `cmd args` and resolves when a stdout/stderr line matches `readyWhen`. */
export function startUntil(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; readyWhen: RegExp; timeoutMs?: number; cwd?: string },
): Promise<Started> {
  const t0 = performance.now()
  const child = spawn(cmd, args, {
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`${cmd} ${args.join(' ')} not ready in ${opts.timeoutMs ?? 120_000} ms:\n${tail(lines)}`),
      )
    }, opts.timeoutMs ?? 120_000)
    let done = false
    const onLine = (line: string) => {
      lines.push(line)
      const m = done ? null : opts.readyWhen.exec(line)
      if (m) {
        done = true
        clearTimeout(timer)
        resolve({ child, pid: child.pid ?? -1, readyMs: performance.now() - t0, lines, match: m })
      }
    }
    for (const stream of [child.stdout, child.stderr]) {
      let buf = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk: string) => {
        buf += chunk
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          onLine(buf.slice(0, i))
          buf = buf.slice(i + 1)
        }
      })
    }
    child.once('exit', (code) => {
      if (done) return
      clearTimeout(timer)
      reject(new Error(`${cmd} ${args.join(' ')} exited (${code}) before ready:\n${tail(lines)}`))
    })
  })
}

const tail = (lines: string[]) => lines.slice(-30).join('\n')

/** SIGINT (Halyard's graceful stop), SIGKILL after `graceMs`; resolves once it has exited. */
export async function stop(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill('SIGINT')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** Runs a command to completion; its stdout. */
export async function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await execFileP(cmd, args, { env, maxBuffer: 1 << 20 })
  return stdout
}

/** Polls `url` until it answers 200 (Halyard's /ready). */
export async function waitOk(url: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      await res.arrayBuffer()
      if (res.ok) return
    } catch {}
    await sleep(100)
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`)
}
