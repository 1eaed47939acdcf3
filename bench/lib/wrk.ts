/** wrk (C load generator) for the benches: one thread, a Lua script for the POST body and headers. */
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const execFileP = promisify(execFile)

export function findWrk(): string | undefined {
  for (const p of ['/usr/bin/wrk', '/usr/local/bin/wrk']) {
    try {
      execFileSync(p, ['-v'], { stdio: 'ignore' })
      return p
    } catch (err) {
      // `wrk -v` prints its version and exits 1: being able to run it is what counts. A binary
      // that is not there fails with status null (ENOENT), not a number.
      if (typeof (err as { status?: number | null }).status === 'number') return p
    }
  }
  return undefined
}

export interface WrkResult {
  reqPerSec: number
  /** Milliseconds. */
  p50: number
  p99: number
  errors: number
}

const lua = (s: string) => JSON.stringify(s) // a JSON string literal is a valid Lua string literal here

/**
 * A body that differs on every request: `eth_getBalance` of a new address at `latest`, so neither
 * a cache nor coalescing of identical in-flight calls can answer it (what a busy dApp sends).
 * The address is a random 32-bit part, a per-run counter and zeros: never the same twice in a run.
 */
export const DISTINCT_BALANCE_LUA = `
local counter = 0
math.randomseed(os.time())
request = function()
  counter = counter + 1
  local addr = "0x" .. string.format("%08x", math.random(0, 2147483647)) .. string.format("%08x", counter) .. string.rep("0", 24)
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["' .. addr .. '","latest"]}')
end
`

/** The same distinct body for autocannon (the fallback load generator). */
export function distinctBalanceBody(counter: number): string {
  const addr = `0x${Math.floor(Math.random() * 0x7fffffff)
    .toString(16)
    .padStart(8, '0')}${counter.toString(16).padStart(8, '0')}${'0'.repeat(24)}`
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [addr, 'latest'] })
}

/**
 * Runs `wrk -t1 -c{connections} -d{seconds}s --latency` with a POST of `body`, or with
 * `distinct`, a new eth_getBalance body per request (DISTINCT_BALANCE_LUA).
 */
export async function runWrk(
  bin: string,
  opts: {
    url: string
    body: string
    headers: Record<string, string>
    connections: number
    seconds: number
    distinct?: boolean
  },
): Promise<WrkResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-wrk-'))
  const script = path.join(dir, 'post.lua')
  const lines = ['wrk.method = "POST"', `wrk.body = ${lua(opts.body)}`]
  for (const [k, v] of Object.entries(opts.headers)) lines.push(`wrk.headers[${lua(k)}] = ${lua(v)}`)
  if (opts.distinct) lines.push(DISTINCT_BALANCE_LUA)
  writeFileSync(script, `${lines.join('\n')}\n`)
  try {
    const { stdout } = await execFileP(
      bin,
      ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '-s', script, opts.url],
      { maxBuffer: 1 << 20 },
    )
    return parseWrk(stdout)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function toMs(value: string, unit: string): number {
  const n = Number(value)
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : n
}

export function parseWrk(out: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)
  if (!rps) throw new Error(`unexpected wrk output:\n${out}`)
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out)
    return m ? Math.round(toMs(m[1]!, m[2]!) * 100) / 100 : Number.NaN
  }
  let errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  if (sock) errors += sock.slice(1).reduce((n, x) => n + Number(x), 0)
  return { reqPerSec: Number(rps[1]), p50: pct('50'), p99: pct('99'), errors }
}
