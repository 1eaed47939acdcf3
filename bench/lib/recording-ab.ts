/**
 * bench:rpc's request-log rows: a Halyard recording requests (the default) and one with
 * HALYARD_REQUEST_LOG=off, both started before any row and loaded in turn — off, on, on, off
 * for each call — so that a neighbour's load, which drifts over a run on a shared machine,
 * falls on both alike. The ratio compares the summed rows of each.
 */
import { type HalyardChild, startHalyardChild } from './halyard-child.ts'

interface AbRow {
  reqPerSec: number
  cpuUsPerReq: number | undefined
}

type AbRun = (
  name: string,
  target: { url: string; pid?: number | undefined },
  body: unknown,
  headers?: Record<string, string>,
) => Promise<AbRow>

const call = (method: string) => ({ jsonrpc: '2.0', id: 1, method, params: [] })

export async function recordingAb(
  script: string,
  anvilUrl: string,
  run: AbRun,
  stop: (h: HalyardChild) => Promise<void>,
): Promise<string[]> {
  const on = await startHalyardChild(script, anvilUrl)
  const off = await startHalyardChild(script, anvilUrl, { env: { HALYARD_REQUEST_LOG: 'off' } })
  try {
    // Unmeasured: both compile their hot paths before the first row (a cold process reads lower).
    for (const h of [on, off])
      for (const method of ['eth_blockNumber', 'eth_chainId'])
        await run(`warm-up ${method}`, { url: h.url, pid: h.child.pid }, call(method), { 'x-api-key': h.key })
    const lines: string[] = []
    for (const [label, method] of [
      ['uncached', 'eth_blockNumber'],
      ['cached', 'eth_chainId'],
    ] as const) {
      const rows: Record<'on' | 'off', AbRow[]> = { on: [], off: [] }
      for (const which of ['off', 'on', 'on', 'off'] as const) {
        const h = which === 'on' ? on : off
        const name = `Halyard × 1, request log ${which} · ${method} (${label})`
        rows[which].push(
          await run(name, { url: h.url, pid: h.child.pid }, call(method), { 'x-api-key': h.key }),
        )
      }
      const rps = (r: AbRow[]) => r.reduce((a, x) => a + x.reqPerSec, 0)
      const cpu = (r: AbRow[]) => r.reduce((a, x) => a + (x.cpuUsPerReq ?? Number.NaN), 0) / r.length
      lines.push(
        `  request log on / off, ${label.padEnd(9)}       ${(rps(rows.on) / rps(rows.off)).toFixed(2)}× req/s; CPU/req ${cpu(rows.on).toFixed(1)} vs ${cpu(rows.off).toFixed(1)} µs`,
      )
    }
    return lines
  } finally {
    await stop(on)
    await stop(off)
  }
}
