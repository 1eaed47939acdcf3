import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Worker } from 'node:worker_threads'

/**
 * The bench's webhook receiver: answers 200 at once and logs, while counting is on, each
 * event's arrival time (ms since the epoch, performance clock) and block number into shared
 * memory. By default it runs on its own thread, as a real receiver runs outside Halyard's
 * process; `inline` runs it on the main thread, sharing the event loop with Halyard.
 */
export interface Receiver {
  readonly port: number
  readonly mode: 'thread' | 'inline'
  setCounting(on: boolean): void
  /** Events logged so far. */
  count(): number
  arrival(i: number): { at: number; block: number }
  close(): Promise<void>
}

const CAPACITY = 1 << 16

/** Runs in the worker (plain JS: no loader needed) and, through `serve`, inline. */
const SERVE = `
function serve(http, times, blocks, meta, onListening) {
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      if (Atomics.load(meta, 1) === 1) {
        const body = JSON.parse(Buffer.concat(chunks).toString())
        const i = Atomics.load(meta, 0)
        if (i < times.length) {
          times[i] = performance.timeOrigin + performance.now()
          blocks[i] = body.data.block_number ?? body.data.blockNumber
          Atomics.store(meta, 0, i + 1)
        }
      }
      res.writeHead(200).end('ok')
    })
  })
  server.listen(0, '127.0.0.1', () => onListening(server))
  return server
}
`

export async function startReceiver(mode: 'thread' | 'inline'): Promise<Receiver> {
  const times = new Float64Array(new SharedArrayBuffer(CAPACITY * 8))
  const blocks = new Int32Array(new SharedArrayBuffer(CAPACITY * 4))
  const meta = new Int32Array(new SharedArrayBuffer(8))
  const common = {
    mode,
    setCounting: (on: boolean) => Atomics.store(meta, 1, on ? 1 : 0),
    count: () => Atomics.load(meta, 0),
    arrival: (i: number) => ({ at: times[i] as number, block: blocks[i] as number }),
  }
  if (mode === 'inline') {
    const serve = new Function(`${SERVE}; return serve`)() as (
      h: typeof http,
      t: Float64Array,
      b: Int32Array,
      m: Int32Array,
      cb: (s: http.Server) => void,
    ) => http.Server
    let server: http.Server | undefined
    await new Promise<void>((r) => {
      server = serve(http, times, blocks, meta, () => r())
    })
    const s = server as http.Server
    return {
      ...common,
      port: (s.address() as AddressInfo).port,
      close: async () => {
        s.closeAllConnections()
        await new Promise<void>((r) => s.close(() => r()))
      },
    }
  }
  const worker = new Worker(
    `${SERVE}
    const { parentPort, workerData } = require('node:worker_threads')
    const server = serve(require('node:http'), workerData.times, workerData.blocks, workerData.meta, (s) =>
      parentPort.postMessage(s.address().port))
    parentPort.on('message', () => { server.closeAllConnections(); server.close(() => process.exit(0)) })`,
    { eval: true, workerData: { times, blocks, meta } },
  )
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return {
    ...common,
    port,
    close: async () => {
      const exited = new Promise<void>((r) => worker.once('exit', () => r()))
      worker.postMessage('close')
      await exited
    },
  }
}
