/**
 * The footprint bench's load: wrk (one thread) posting eth_getBalance for a different address on
 * every request, so the RPC cache and anything keyed by the call sees distinct keys (a constant
 * call would be one cache entry). While it runs, the target's RSS is sampled each second.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { parseWrk } from './wrk.ts'

const execFileP = promisify(execFile)

export interface LoadResult {
  reqPerSec: number
  /** Answers that were not 2xx plus socket errors. */
  errors: number
  /** Highest RSS sampled during the load, MB. */
  peakRssMb: number
}

const lua = (s: string) => JSON.stringify(s)

function script(key: string): string {
  return `wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["x-api-key"] = ${lua(key)}
local n = 0
request = function()
  n = n + 1
  local body = '{"jsonrpc":"2.0","id":' .. n .. ',"method":"eth_getBalance","params":["0x' ..
    string.format("%040x", n) .. '","latest"]}'
  return wrk.format(nil, nil, nil, body)
end
`
}

export async function loadRpc(opts: {
  wrk: string
  url: string
  key: string
  seconds: number
  connections: number
  /** Sampled each second; the peak is reported. */
  rss: () => number | undefined
}): Promise<LoadResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-footprint-wrk-'))
  const file = path.join(dir, 'distinct.lua')
  writeFileSync(file, script(opts.key))
  let peak = opts.rss() ?? 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, opts.rss() ?? 0)
  }, 1_000)
  try {
    const { stdout } = await execFileP(
      opts.wrk,
      ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '-s', file, opts.url],
      { maxBuffer: 1 << 20 },
    )
    const r = parseWrk(stdout)
    return { reqPerSec: r.reqPerSec, errors: r.errors, peakRssMb: Math.max(peak, opts.rss() ?? 0) }
  } finally {
    clearInterval(sampler)
    rmSync(dir, { recursive: true, force: true })
  }
}
