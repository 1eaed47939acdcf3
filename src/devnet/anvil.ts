import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)

/** The anvil binary shipped by the platform package of `@foundry-rs/anvil` (no download). */
export function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'bin', 'anvil')
  } catch {
    throw new Error(`anvil is not available for ${process.platform}/${process.arch}: ${pkg} is not installed`)
  }
}

export interface AnvilOptions {
  chainId?: number
  /** Seconds between blocks; 0 or undefined = mine on every transaction. */
  blockTime?: number
  /** 0 (default) picks a free port. */
  port?: number
  /** Load state from and dump it to this file (dev mode keeps the chain across restarts). */
  statePath?: string
  extraArgs?: string[]
  /** How long anvil may take to listen (loading a large state takes longer); default 30 s. */
  startTimeoutMs?: number
  /** Called with anvil's output lines (dev mode prints nothing by default). */
  onOutput?: (line: string) => void
}

export interface AnvilProcess {
  readonly url: string
  readonly wsUrl: string
  readonly port: number
  readonly chainId: number
  /** anvil's own process id (not its guard shell's), for CPU accounting in benches. */
  readonly pid: number | undefined
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  stop(): Promise<void>
}

/**
 * The guard shell starts anvil in the background and kills it when its stdin closes, which
 * happens when our process exits for any reason, SIGKILL included: no anvil outlives Halyard.
 */
const GUARD =
  'bin="$1"; shift; "$bin" "$@" & child=$!; echo "halyard-anvil-pid $child" >&2; trap \'kill $child 2>/dev/null\' TERM INT; read _ignored; kill $child 2>/dev/null; wait $child'

export async function startAnvil(opts: AnvilOptions = {}): Promise<AnvilProcess> {
  const chainId = opts.chainId ?? 31337
  const args = ['--port', String(opts.port ?? 0), '--host', '127.0.0.1', '--chain-id', String(chainId)]
  if (opts.blockTime && opts.blockTime > 0) args.push('--block-time', String(opts.blockTime))
  if (opts.statePath) args.push('--state', opts.statePath)
  args.push(...(opts.extraArgs ?? []))

  const child = spawn('/bin/sh', ['-c', GUARD, 'halyard-anvil', anvilBinary(), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let anvilPid: number | undefined
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const output: string[] = []

  const port = await new Promise<number>((resolve, reject) => {
    const startMs = opts.startTimeoutMs ?? 30_000
    const timer = setTimeout(() => fail(new Error(`anvil did not start within ${startMs / 1000} s`)), startMs)
    let failed = false
    const fail = (err: Error) => {
      // The guard's own exit while we stop it is not a second failure.
      if (failed) return
      failed = true
      clearTimeout(timer)
      // Through the guard (stdin closed → it kills anvil), never SIGKILL on the shell alone: that
      // would orphan an anvil that is still starting.
      const failure = new Error(`${err.message}\n${output.slice(-20).join('\n')}`)
      stopGuarded(child, exited, () => anvilPid).then(() => reject(failure), reject)
    }
    const onLine = (line: string) => {
      output.push(line)
      opts.onOutput?.(line)
      const pid = /^halyard-anvil-pid (\d+)/.exec(line)
      if (pid) anvilPid = Number(pid[1])
      const m = /Listening on [\d.]+:(\d+)/.exec(line)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    lines(child.stdout!, onLine)
    lines(child.stderr!, onLine)
    child.once('exit', (code) => fail(new Error(`anvil exited with code ${code} before listening`)))
  })

  const url = `http://127.0.0.1:${port}`
  let stopping: Promise<void> | undefined
  try {
    await waitForRpc(url, 15_000)
  } catch (err) {
    stopping = stopGuarded(child, exited, () => anvilPid)
    await stopping
    throw err
  }
  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    chainId,
    pid: anvilPid,
    exited,
    stop() {
      stopping ??= stopGuarded(child, exited, () => anvilPid)
      return stopping
    },
  }
}

async function stopGuarded(child: ChildProcess, exited: Promise<void>, pid: () => number | undefined) {
  if (child.exitCode !== null) return
  child.stdin?.end()
  const killed = await Promise.race([exited.then(() => true), delay(10_000).then(() => false)])
  if (!killed) {
    killPid(pid())
    child.kill('SIGKILL')
    await exited
  }
}

function killPid(pid: number | undefined) {
  if (pid === undefined) return
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // already gone
  }
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void) {
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    buf += chunk
    let i = buf.indexOf('\n')
    while (i >= 0) {
      onLine(buf.slice(0, i))
      buf = buf.slice(i + 1)
      i = buf.indexOf('\n')
    }
  })
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits until a JSON-RPC node at `url` answers eth_chainId. */
export async function waitForRpc(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < until) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: AbortSignal.timeout(1_000),
      })
      if (res.ok) return
      last = new Error(`HTTP ${res.status}`)
    } catch (err) {
      last = err
    }
    await delay(100)
  }
  throw new Error(`node at ${url} did not answer within ${timeoutMs} ms: ${(last as Error)?.message}`)
}
