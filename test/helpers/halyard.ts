import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadEnv } from '../../src/config/env.ts'
import type { NetworkConfig, NetworkConfigInput } from '../../src/config/file.ts'
import type { AnvilProcess } from '../../src/devnet/anvil.ts'
import { networkSchema } from '../../src/server/config-schema.ts'
import { type Halyard, type StartOptions, startHalyard } from '../../src/server/runtime.ts'
import type { Storage } from '../../src/storage/database.ts'

export interface TestHalyard {
  halyard: Halyard
  baseUrl: string
  /** Creates an account (unique e-mail) on `plan` and a key on it. */
  createKey(opts?: {
    env?: 'live' | 'test'
    scopes?: string[]
    plan?: string
    email?: string
  }): Promise<string>
  close(): Promise<void>
}

/** A network entry for an anvil node, with defaults a test can override. */
export function anvilNetwork(
  anvil: AnvilProcess,
  overrides: Partial<NetworkConfigInput> = {},
): NetworkConfig {
  return networkSchema.parse({
    chain: 'ethereum',
    network: 'devnet',
    kind: 'evm',
    chainId: anvil.chainId,
    confirmations: 0,
    finalityDepth: 2,
    blockTimeMs: 1000,
    upstreams: [{ url: anvil.url, ws: anvil.wsUrl }],
    ...overrides,
  })
}

/**
 * Starts a real Halyard in this process on a free port. `storage` comes from
 * test/helpers/storage.ts; env values (REDIS_URL, …) may be overridden.
 */
export async function startTestHalyard(opts: {
  networks: NetworkConfig[]
  storage: Storage
  env?: Record<string, string | undefined>
  devMode?: boolean
  extra?: Partial<StartOptions>
}): Promise<TestHalyard> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-test-'))
  const env = loadEnv({ HALYARD_LOG_LEVEL: 'silent', HALYARD_DATA_DIR: dataDir, ...opts.env })
  const halyard = await startHalyard({
    env,
    networks: opts.networks,
    storage: opts.storage,
    secretKey: randomBytes(32),
    port: 0,
    host: '127.0.0.1',
    devMode: opts.devMode ?? false,
    ...opts.extra,
  })
  return {
    halyard,
    baseUrl: halyard.baseUrl,
    async createKey(k = {}) {
      const email = k.email ?? `t-${randomBytes(5).toString('hex')}@test.local`
      const auth = halyard.ctx.auth
      try {
        await auth.accountByEmail(email)
      } catch {
        await auth.createAccount(email, k.plan ?? 'enterprise')
      }
      const created = await auth.createKey({ accountEmail: email, env: k.env ?? 'test', scopes: k.scopes })
      return created.key
    },
    close: () => halyard.close(),
  }
}

/** POSTs one JSON-RPC body (object or batch) with a key; returns status, headers and JSON. */
export async function postRpc(
  url: string,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = text
  }
  return { status: res.status, headers: res.headers, json: json as Record<string, unknown> & unknown[] }
}

export const call = (method: string, params: unknown[] = [], id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
})
