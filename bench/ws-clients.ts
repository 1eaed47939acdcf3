/**
 * bench:ws client processes: each opens its share of the clients, subscribes every one to
 * newHeads and records when each client received each head, with the same clock as the other
 * processes (`performance.timeOrigin + performance.now()`). Its own overhead is reported too:
 * a receipt time is late by up to the process's event-loop delay. Receipts are kept per client,
 * so the process can say whether every client got every mined head exactly once, and group the
 * times by the server process that served each client (cluster rows: the driver names the
 * worker of each client's local port, since each worker receives the head at its own time).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import WebSocket from 'ws'

const OPEN_CONCURRENCY = 250
const now = () => performance.timeOrigin + performance.now()

export type FromDriver =
  | { type: 'start' }
  | {
      type: 'finish'
      /** The heads mined in the phase: every client should get each of them once. */
      firstBlock: number
      blocks: number
      /** Cluster rows: the worker index holding each client's connection, by its local port. */
      workerOfPort?: Record<number, number>
    }

/** Clients whose port no worker claimed are grouped here (none expected). */
export const UNMAPPED = -1

export type ToDriver =
  | { type: 'ready'; connected: number; failed: number }
  | {
      type: 'done'
      /** Receipt times by server process (worker index, or 0 for a single process), then head number. */
      received: Record<string, Record<string, number[]>>
      /** How many clients each server process held (same keys as `received`). */
      clientsBy: Record<string, number>
      /** Clients that got every mined head exactly once; (client, head) pairs missing; extra receipts. */
      exactlyOnce: number
      missing: number
      duplicates: number
      /** Event-loop delay p99 (ms) and CPU time (ms) while blocks were mined. */
      loopDelayP99: number
      cpuMs: number
    }

export async function clientsMain(url: string, count: number) {
  /** Per client: its local port and its receipts as (head number, time) pairs. */
  const clients: { ws: WebSocket; port: number; got: number[] }[] = []
  let failed = 0
  const openOne = () =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: 15_000,
      })
      let subId: string | undefined
      let port = 0
      const got: number[] = []
      ws.once('upgrade', (res) => {
        port = res.socket.localPort ?? 0
      })
      ws.on('message', (data) => {
        const t = now()
        const text = data.toString()
        if (subId === undefined) {
          const m = /"result":"(0x[0-9a-fA-F]+)"/.exec(text)
          if (m) {
            subId = m[1]
            clients.push({ ws, port, got })
            resolve()
          }
          return
        }
        // A regex instead of JSON.parse: the client side must not dominate the measurement.
        const n = /"number":"(0x[0-9a-fA-F]+)"/.exec(text)
        if (n) got.push(Number.parseInt(n[1]!, 16), t)
      })
      ws.on('open', () => ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}'))
      const fail = () => {
        if (subId !== undefined || settled) return
        settled = true
        failed++
        resolve()
      }
      let settled = false
      ws.on('error', fail)
      ws.on('close', fail)
      ws.on('unexpected-response', fail)
    })
  for (let i = 0; i < count; i += OPEN_CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, count - i) }, openOne))
  }
  const delay = monitorEventLoopDelay({ resolution: 5 })
  let cpu = process.cpuUsage()
  process.send?.({ type: 'ready', connected: clients.length, failed } satisfies ToDriver)
  process.on('message', (m: FromDriver) => {
    if (m.type === 'start') {
      delay.enable()
      cpu = process.cpuUsage()
      return
    }
    if (m.type !== 'finish') return
    delay.disable()
    const used = process.cpuUsage(cpu)
    for (const c of clients) c.ws.terminate()
    const done: ToDriver = {
      type: 'done',
      ...tally(clients, m.firstBlock, m.blocks, m.workerOfPort),
      loopDelayP99: delay.percentile(99) / 1e6,
      cpuMs: (used.user + used.system) / 1000,
    }
    // Exit only once the (large) result message has been handed to the IPC channel.
    process.send?.(done, () => process.exit(0))
  })
}

/** Groups the receipts by server process and checks each client got each head exactly once. */
function tally(
  clients: { port: number; got: number[] }[],
  firstBlock: number,
  blocks: number,
  workerOfPort: Record<number, number> | undefined,
) {
  const received: Record<string, Record<string, number[]>> = {}
  const clientsBy: Record<string, number> = {}
  let exactlyOnce = 0
  let missing = 0
  let duplicates = 0
  const seen = new Uint32Array(blocks)
  for (const c of clients) {
    const group = workerOfPort ? (workerOfPort[c.port] ?? UNMAPPED) : 0
    received[group] ??= {}
    clientsBy[group] = (clientsBy[group] ?? 0) + 1
    const byHead = received[group]
    seen.fill(0)
    for (let i = 0; i < c.got.length; i += 2) {
      const n = c.got[i]!
      const times = byHead[n] ?? []
      byHead[n] = times
      times.push(c.got[i + 1]!)
      const k = n - firstBlock
      if (k >= 0 && k < blocks) seen[k]!++
    }
    let ok = true
    for (const count of seen) {
      if (count !== 1) ok = false
      if (count === 0) missing++
      else duplicates += count - 1
    }
    if (ok) exactlyOnce++
  }
  return { received, clientsBy, exactlyOnce, missing, duplicates }
}
