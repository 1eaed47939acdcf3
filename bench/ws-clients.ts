/**
 * bench:ws client processes: each opens its share of the clients, subscribes every one to
 * newHeads and records when each client received each head, with the same clock as the other
 * processes (`performance.timeOrigin + performance.now()`). Its own overhead is reported too:
 * a receipt time is late by up to the process's event-loop delay.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import WebSocket from 'ws'

const OPEN_CONCURRENCY = 250
const now = () => performance.timeOrigin + performance.now()

export type ToDriver =
  | { type: 'ready'; connected: number; failed: number }
  | {
      type: 'done'
      received: Record<string, number[]>
      /** Event-loop delay p99 (ms) and CPU time (ms) while blocks were mined. */
      loopDelayP99: number
      cpuMs: number
    }

export async function clientsMain(url: string, count: number) {
  const received = new Map<number, number[]>()
  const sockets: WebSocket[] = []
  let failed = 0
  const openOne = () =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: 15_000,
      })
      let subId: string | undefined
      ws.on('message', (data) => {
        const t = now()
        const text = data.toString()
        if (subId === undefined) {
          const m = /"result":"(0x[0-9a-fA-F]+)"/.exec(text)
          if (m) {
            subId = m[1]
            sockets.push(ws)
            resolve()
          }
          return
        }
        // A regex instead of JSON.parse: the client side must not dominate the measurement.
        const n = /"number":"(0x[0-9a-fA-F]+)"/.exec(text)
        if (!n) return
        const num = Number.parseInt(n[1]!, 16)
        let list = received.get(num)
        if (!list) {
          list = []
          received.set(num, list)
        }
        list.push(t)
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
  process.send?.({ type: 'ready', connected: sockets.length, failed } satisfies ToDriver)
  process.on('message', (m: { type: string }) => {
    if (m.type === 'start') {
      delay.enable()
      cpu = process.cpuUsage()
      return
    }
    if (m.type !== 'finish') return
    delay.disable()
    const used = process.cpuUsage(cpu)
    for (const ws of sockets) ws.terminate()
    const done: ToDriver = {
      type: 'done',
      received: Object.fromEntries(received),
      loopDelayP99: delay.percentile(99) / 1e6,
      cpuMs: (used.user + used.system) / 1000,
    }
    // Exit only once the (large) result message has been handed to the IPC channel.
    process.send?.(done, () => process.exit(0))
  })
}
