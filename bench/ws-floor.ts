/**
 * The floor for bench:ws: the least a single Node process can do to fan a head out over
 * WebSockets. It speaks just enough of eth_subscribe for the bench's clients, takes heads from
 * one upstream newHeads subscription, frames each head once and writes the same bytes to every
 * client's socket: no auth, no limits, no per-subscription ids, no bookkeeping. Halyard's rows
 * are read against this one: the gap is Halyard's own cost, the rest is the machine's.
 */
import { randomBytes } from 'node:crypto'
import type { Duplex } from 'node:stream'
import WebSocket, { WebSocketServer } from 'ws'

export type ToServer = { type: 'stats' } | { type: 'connections' } | { type: 'stop' }

/** One cluster worker's part of the stats: its own receipt times and the clients it holds. */
export interface WorkerStats {
  index: number
  received: [number, number][]
  fannedOut: [number, number][]
  fanOutCpu: [number, number][]
  peakRssMiB: number
  /** Remote (client-side) ports of the WebSocket connections this worker holds. */
  ports: number[]
}

export type FromServer =
  | { type: 'listening'; url: string; idleRssMiB: number }
  | {
      type: 'stats'
      received: [number, number][]
      fannedOut: [number, number][]
      fanOutCpu: [number, number][]
      /** For a cluster: the sum of the workers' peaks. */
      peakRssMiB: number
      /** Cluster only: per worker (the top-level maps are then empty). */
      workers?: WorkerStats[]
    }
  | { type: 'connections'; count: number }

const now = () => performance.timeOrigin + performance.now()

/** Answers the driver's questions over IPC; `stats` also restarts the RSS peak. */
export function serveStats(opts: {
  url: string
  connections: () => number
  received: Map<number, number>
  fannedOut: Map<number, number>
  fanOutCpu: Map<number, number>
  stop: () => Promise<void>
}): void {
  let peakRss = process.memoryUsage().rss
  setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
  }, 100).unref()
  const send = (m: FromServer) => process.send?.(m)
  process.on('message', async (m: ToServer) => {
    if (m.type === 'connections') send({ type: 'connections', count: opts.connections() })
    if (m.type === 'stats') {
      send({
        type: 'stats',
        received: [...opts.received],
        fannedOut: [...opts.fannedOut],
        fanOutCpu: [...opts.fanOutCpu],
        peakRssMiB: peakRss / 2 ** 20,
      })
      peakRss = process.memoryUsage().rss
    }
    if (m.type !== 'stop') return
    await opts.stop()
    process.exit(0)
  })
  send({ type: 'listening', url: opts.url, idleRssMiB: process.memoryUsage().rss / 2 ** 20 })
}

/** Unmasked text frame header (RFC 6455 5.2) for a payload shorter than 64 KiB. */
function frame(payload: Buffer): Buffer {
  const header =
    payload.length < 126
      ? Buffer.from([0x81, payload.length])
      : Buffer.from([0x81, 126, payload.length >> 8, payload.length & 0xff])
  return Buffer.concat([header, payload])
}

export async function floorMain(anvilWsUrl: string): Promise<void> {
  const sockets = new Set<Duplex>()
  const wss = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    perMessageDeflate: false,
    clientTracking: false,
  })
  await new Promise((r) => wss.once('listening', r))
  const id = `0x${randomBytes(16).toString('hex')}`
  wss.on('connection', (ws, req) => {
    ws.once('message', (data) => {
      const m = /"id":(\d+)/.exec(data.toString())
      ws.send(`{"jsonrpc":"2.0","id":${m?.[1] ?? 1},"result":"${id}"}`)
      sockets.add(req.socket)
    })
    ws.on('error', () => {})
    ws.on('close', () => sockets.delete(req.socket))
  })
  const received = new Map<number, number>()
  const fannedOut = new Map<number, number>()
  const fanOutCpu = new Map<number, number>()
  const upstream = new WebSocket(anvilWsUrl, { perMessageDeflate: false })
  await new Promise((r, j) => upstream.once('open', r).once('error', j))
  upstream.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}')
  upstream.on('message', (data) => {
    const at = now()
    const msg = JSON.parse(data.toString()) as { params?: { result?: Record<string, unknown> } }
    const head = msg.params?.result
    if (!head) return
    const n = Number(head.number)
    received.set(n, at)
    const cpu = process.cpuUsage()
    const bytes = frame(
      Buffer.from(
        `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":${JSON.stringify(head)}}}`,
      ),
    )
    for (const s of sockets) s.write(bytes)
    const used = process.cpuUsage(cpu)
    fannedOut.set(n, now())
    fanOutCpu.set(n, (used.user + used.system) / 1000)
  })
  const address = wss.address()
  const port = address === null || typeof address === 'string' ? 0 : address.port
  serveStats({
    url: `ws://127.0.0.1:${port}/`,
    connections: () => sockets.size,
    received,
    fannedOut,
    fanOutCpu,
    stop: async () => {
      upstream.terminate()
      for (const s of sockets) s.destroy()
      wss.close()
    },
  })
}
