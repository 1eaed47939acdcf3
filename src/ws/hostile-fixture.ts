import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'

/**
 * Test-only: the shared setup of the hostile WebSocket tests (upgrade-hostile.test.ts and
 * frames-hostile.test.ts): anvil behind a Halyard on PGlite, with `devnet` and `mainnet`
 * networks, one live and one test key.
 */

export const DEV = '/v1/ws/ethereum/devnet'

/**
 * What one describe block shares. The resources are set by its beforeAll, so read them inside a
 * test, never at collection time; the helpers may be destructured anywhere.
 */
export interface HostileWsFixture {
  anvil: AnvilProcess
  storage: TestStorage
  h: TestHalyard
  /** A live key. */
  key: string
  /** A test key (refused on mainnet). */
  testKey: string
  port: number
  /** `host:port`, for the Host header. */
  host: string
  /** How many sockets the server holds open. */
  connections(): Promise<number>
  /** An upgrade request; `headers` values replace the defaults, null drops one. */
  upgrade(
    path: string,
    o?: { method?: string; headers?: Record<string, string | null>; body?: string },
  ): string
}

/** Registers the beforeAll/afterAll of the enclosing describe block. */
export function hostileWsFixture(): HostileWsFixture {
  // The resources are filled in by beforeAll below, before any test runs.
  const fx = {} as HostileWsFixture
  fx.connections = () => new Promise<number>((r) => fx.h.halyard.app.server.getConnections((_e, n) => r(n)))
  fx.upgrade = (path, o = {}) => {
    const all: Record<string, string | null> = {
      host: fx.host,
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': randomBytes(16).toString('base64'),
      'sec-websocket-version': '13',
      'x-api-key': fx.key,
      ...o.headers,
    }
    const lines = Object.entries(all).flatMap(([k, v]) => (v === null ? [] : [`${k}: ${v}`]))
    return `${o.method ?? 'GET'} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${o.body ?? ''}`
  }

  beforeAll(async () => {
    fx.anvil = await startAnvil()
    fx.storage = await storageBackends()[0]!.open()
    const noIndexer = { indexer: { enabled: false } }
    fx.h = await startTestHalyard({
      storage: fx.storage,
      networks: [
        anvilNetwork(fx.anvil, noIndexer),
        anvilNetwork(fx.anvil, { ...noIndexer, network: 'mainnet' }),
      ],
    })
    fx.key = await fx.h.createKey({ env: 'live' })
    fx.testKey = await fx.h.createKey({ env: 'test' })
    const origin = new URL(fx.h.halyard.origin)
    fx.port = Number(origin.port)
    fx.host = origin.host
  })
  afterAll(async () => {
    await fx.h?.close()
    await fx.storage?.close()
    await fx.anvil?.stop()
  })

  return fx
}
