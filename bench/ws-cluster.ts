/**
 * bench:ws cluster rows: Halyard as `halyard serve` runs it with HALYARD_WORKERS (node:cluster
 * on one port, PostgreSQL + Redis; bench/lib/halyard-cluster.ts), answering the driver's
 * questions like the single-process child (ws-floor.ts serveStats). Each worker holds its own
 * upstream newHeads subscription, so each receives every head at its own time: a worker reports
 * its receipt times and the client-side ports of the connections it holds, and the driver
 * measures each client against the worker that served it.
 */
import cluster, { type Worker } from 'node:cluster'
import type { Socket } from 'node:net'
import { networkSchema } from '../src/server/config-schema.ts'
import type { Halyard } from '../src/server/runtime.ts'
import { serveClusterWorker, startClusterPrimary } from './lib/halyard-cluster.ts'
import type { FromServer, ToServer, WorkerStats } from './ws-floor.ts'

type FromWorker =
  | ({ type: 'stats' } & WorkerStats)
  | { type: 'connections'; count: number }
  | { type: 'rss'; rssMiB: number }
type ToWorker = { type: 'stats' } | { type: 'connections' } | { type: 'rss' }

export async function clusterMain(
  anvilUrl: string,
  upstreamWsUrl: string,
  chainId: number,
  workers: number,
): Promise<void> {
  const config = networkSchema.parse({
    chain: 'ethereum',
    network: 'devnet',
    chainId,
    blockTimeMs: 1000,
    indexer: { enabled: false },
    upstreams: [{ url: anvilUrl, ws: upstreamWsUrl }],
  })
  if (cluster.isWorker) return serveClusterWorker(config, observeWorker)

  const primary = await startClusterPrimary(workers)
  const ask = <T extends FromWorker['type']>(type: T & ToWorker['type']) =>
    Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (w) =>
          new Promise<Extract<FromWorker, { type: T }>>((resolve) => {
            const on = (m: FromWorker) => {
              if (m.type !== type) return
              ;(w as Worker).off('message', on)
              resolve(m as Extract<FromWorker, { type: T }>)
            }
            ;(w as Worker).on('message', on)
            ;(w as Worker).send({ type } satisfies ToWorker)
          }),
      ),
    )
  const send = (m: FromServer) => process.send?.(m)
  process.on('message', async (m: ToServer) => {
    if (m.type === 'connections') {
      const counts = await ask('connections')
      send({ type: 'connections', count: counts.reduce((a, c) => a + c.count, 0) })
    }
    if (m.type === 'stats') {
      const parts = (await ask('stats')).map(({ type: _, ...w }) => w).sort((a, b) => a.index - b.index)
      send({
        type: 'stats',
        received: [],
        fannedOut: [],
        fanOutCpu: [],
        peakRssMiB: parts.reduce((a, w) => a + w.peakRssMiB, 0),
        workers: parts,
      })
    }
    if (m.type !== 'stop') return
    await primary.stop()
    process.exit(0)
  })
  const idle = await ask('rss')
  send({
    type: 'listening',
    url: `${primary.baseUrl.replace(/^http/, 'ws')}/ws/ethereum/devnet?apiKey=${primary.key}`,
    idleRssMiB: idle.reduce((a, w) => a + w.rssMiB, 0),
  })
}

/** In each worker: the same observers as the single-process child, plus who it serves. */
function observeWorker(h: Halyard, index: number): void {
  const received = new Map<number, number>()
  const fannedOut = new Map<number, number>()
  const fanOutCpu = new Map<number, number>()
  const streams = h.services.ws.streamsFor(h.ctx.networks.get('ethereum', 'devnet'))
  streams.onHeadReceived = (n, at) => {
    if (!received.has(Number(n))) received.set(Number(n), at)
  }
  streams.onHeadFannedOut = (n, at, cpuMs) => {
    if (!fannedOut.has(Number(n))) fannedOut.set(Number(n), at)
    if (!fanOutCpu.has(Number(n))) fanOutCpu.set(Number(n), cpuMs)
  }
  // A second 'upgrade' listener beside Halyard's: it only notes the client's port.
  const ports = new Set<number>()
  h.app.server.on('upgrade', (_req, socket: Socket) => {
    const port = socket.remotePort
    if (port === undefined) return
    ports.add(port)
    socket.once('close', () => ports.delete(port))
  })
  let peakRss = process.memoryUsage().rss
  setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
  }, 100).unref()
  const send = (m: FromWorker) => process.send?.(m)
  process.on('message', (m: ToWorker) => {
    if (m.type === 'rss') send({ type: 'rss', rssMiB: process.memoryUsage().rss / 2 ** 20 })
    if (m.type === 'connections') send({ type: 'connections', count: h.services.ws.connectionCount() })
    if (m.type !== 'stats') return
    send({
      type: 'stats',
      index,
      received: [...received],
      fannedOut: [...fannedOut],
      fanOutCpu: [...fanOutCpu],
      peakRssMiB: peakRss / 2 ** 20,
      ports: [...ports],
    })
    peakRss = process.memoryUsage().rss
  })
}
