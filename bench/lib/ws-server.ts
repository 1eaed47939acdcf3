/**
 * bench:ws, the Halyard process (`bench/ws.ts --server`): Halyard on PostgreSQL in a scratch
 * schema when DATABASE_URL is set, else PGlite, with hooks recording when each head arrived from
 * upstream and when its fan-out loop ended (and that loop's CPU time), served to the driver over
 * IPC by ws-floor.ts's `serveStats`, as the floor and the cluster do.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { loadEnv } from '../../src/config/env.ts'
import { networkSchema } from '../../src/server/config-schema.ts'
import { startHalyard } from '../../src/server/runtime.ts'
import { openStorage, type Storage } from '../../src/storage/database.ts'
import { serveStats } from '../ws-floor.ts'

export async function serverMain(anvilUrl: string, anvilWsUrl: string, chainId: number) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-ws-'))
  const dbUrl = process.env.DATABASE_URL
  const schema = `bench_ws_${randomBytes(4).toString('hex')}`
  const storage: Storage | undefined = dbUrl
    ? await openStorage({ databaseUrl: dbUrl, schema, poolSize: 4 })
    : undefined
  const halyard = await startHalyard({
    storage,
    env: loadEnv({ HALYARD_LOG_LEVEL: 'warn', HALYARD_DATA_DIR: dataDir }),
    networks: [
      networkSchema.parse({
        chain: 'ethereum',
        network: 'devnet',
        chainId,
        blockTimeMs: 1000,
        indexer: { enabled: false },
        upstreams: [{ url: anvilUrl, ws: anvilWsUrl }],
      }),
    ],
    secretKey: Buffer.alloc(32, 7),
    port: 0,
    host: '127.0.0.1',
  })
  await halyard.ctx.auth.createAccount('bench@ws.local', 'enterprise')
  const key = (await halyard.ctx.auth.createKey({ accountEmail: 'bench@ws.local', env: 'live' })).key
  const received = new Map<number, number>()
  const fannedOut = new Map<number, number>()
  const fanOutCpu = new Map<number, number>()
  const streams = halyard.services.ws.streamsFor(halyard.ctx.networks.get('ethereum', 'devnet'))
  streams.onHeadReceived = (n, at) => {
    if (!received.has(Number(n))) received.set(Number(n), at)
  }
  streams.onHeadFannedOut = (n, at, cpuMs) => {
    if (!fannedOut.has(Number(n))) fannedOut.set(Number(n), at)
    if (!fanOutCpu.has(Number(n))) fanOutCpu.set(Number(n), cpuMs)
  }
  serveStats({
    url: `${halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${key}`,
    connections: () => halyard.services.ws.connectionCount(),
    received,
    fannedOut,
    fanOutCpu,
    stop: async () => {
      await halyard.close()
      rmSync(dataDir, { recursive: true, force: true })
      if (storage && dbUrl) {
        await storage.close()
        const client = new pg.Client({ connectionString: dbUrl })
        await client.connect()
        await client.query(`drop schema if exists ${schema} cascade`)
        await client.end()
      }
    },
  })
}
