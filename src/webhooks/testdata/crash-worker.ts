/**
 * A standalone Halyard for the webhook crash test (webhooks.crash.test.ts): dev mode (so the
 * test's plain-HTTP loopback receiver is allowed), one anvil network, the storage the test
 * names, and a fixed secret key (signing secrets are encrypted with it and must survive the
 * restart). Prints `ready <baseUrl> <apiKey>` once listening; the test SIGKILLs it.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadEnv } from '../../config/env.ts'
import { networkSchema } from '../../server/config-schema.ts'
import { startHalyard } from '../../server/runtime.ts'
import { openStorage } from '../../storage/database.ts'

const storage = await openStorage({
  databaseUrl: process.env.WORKER_DATABASE_URL,
  schema: process.env.WORKER_SCHEMA,
  dataDir: process.env.WORKER_PGLITE_DIR,
  poolSize: 5,
})
const env = loadEnv({
  // PostgreSQL: the LISTEN connection that wakes this worker when another instance has new work.
  DATABASE_URL: process.env.WORKER_DATABASE_URL,
  HALYARD_INSTANCE_ID: process.env.WORKER_INSTANCE_ID,
  HALYARD_LOG_LEVEL: 'silent',
  HALYARD_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-whcrash-')),
  // Generous: the machine running the suite may be busy, and a retry must not exhaust here.
  HALYARD_WEBHOOK_TIMEOUT: process.env.WORKER_WEBHOOK_TIMEOUT ?? '3s',
  HALYARD_WEBHOOK_RETRY_SCHEDULE: '500ms,1s,2s,2s,2s',
})
const halyard = await startHalyard({
  env,
  networks: [
    networkSchema.parse({
      chain: 'ethereum',
      network: 'devnet',
      chainId: 31337,
      confirmations: 0,
      blockTimeMs: 1000,
      upstreams: [{ url: process.env.ANVIL_URL }],
    }),
  ],
  storage,
  secretKey: Buffer.from(process.env.WORKER_SECRET_KEY as string, 'hex'),
  port: 0,
  host: '127.0.0.1',
  devMode: true,
})
const auth = halyard.ctx.auth
const email = 'crash@test.local'
await auth.accountByEmail(email).catch(() => auth.createAccount(email, 'enterprise'))
const { key } = await auth.createKey({ accountEmail: email, env: 'test' })
process.stdout.write(`ready ${halyard.baseUrl} ${key}\n`)
process.on('SIGTERM', () => {
  void halyard.close().then(() => storage.close().then(() => process.exit(0)))
})
