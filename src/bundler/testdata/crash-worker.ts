import { readFileSync } from 'node:fs'
import { FailoverPool } from '../../chains/upstream-pool.ts'
import { createLogger } from '../../logger.ts'
import { openStorage } from '../../storage/database.ts'
import { migrate } from '../../storage/migrate.ts'
import type { Address, Hex } from '../../types.ts'
import { ANVIL_EXECUTOR_KEYS } from '../executor.ts'
import { parseUserOperation } from '../schema.ts'
import { BundlerService } from '../service.ts'
import type { EntryPointVersion } from '../types.ts'

/**
 * Test-only child process for bundler.crash.test.ts and bundler.takeover.test.ts: a
 * BundlerService on a PGlite data directory or a PostgreSQL schema. With WORKER_OPS it accepts
 * those ops one by one in manual bundling mode (printing `accepted <hash>` each, then
 * `accepted-all`) and waits to be killed — with WORKER_BUNDLING=auto its builder runs meanwhile;
 * without WORKER_OPS, it runs the builder loop in auto mode (`bundling`, then `drained` once its
 * mempool is empty) until killed. WORKER_LOG=debug (or any pino level) logs the worker's service;
 * crash-fixture.ts then echoes its output to the test's stderr.
 */

const env = process.env
const storage = await openStorage(
  env.WORKER_DATABASE_URL
    ? { databaseUrl: env.WORKER_DATABASE_URL, schema: env.WORKER_SCHEMA, poolSize: 3 }
    : { dataDir: env.WORKER_PGLITE_DIR },
)
await migrate(storage.db)
const entryPoints = JSON.parse(env.WORKER_ENTRY_POINTS ?? '[]') as {
  address: Address
  version: EntryPointVersion
}[]
const svc = new BundlerService({
  storage,
  logger: createLogger(env.WORKER_LOG ?? 'silent'),
  lockRetryMs: 50,
  networks: [
    {
      slug: 'ethereum-devnet',
      chainId: Number(env.WORKER_CHAIN_ID),
      rpc: new FailoverPool([{ url: env.ANVIL_URL ?? '' }], 20_000),
      entryPoints,
      executorKeys: [ANVIL_EXECUTOR_KEYS[1] as Hex],
      bundlingMode: env.WORKER_OPS && env.WORKER_BUNDLING !== 'auto' ? 'manual' : 'auto',
      idleMs: 50,
      pollMs: 20,
    },
  ],
})

if (env.WORKER_OPS) {
  if (env.WORKER_BUNDLING === 'auto') svc.start()
  const ops = JSON.parse(readFileSync(env.WORKER_OPS, 'utf8')) as {
    entryPoint: Address
    version: EntryPointVersion
    op: unknown
  }[]
  for (const o of ops) {
    const hash = await svc.sendUserOperation(
      'ethereum-devnet',
      parseUserOperation(o.op, o.version),
      o.entryPoint,
    )
    process.stdout.write(`accepted ${hash}\n`)
  }
  process.stdout.write('accepted-all\n')
} else {
  svc.start()
  process.stdout.write('bundling\n')
  // Says so once nothing is waiting any more (the test reads the database only after that).
  for (;;) {
    const waiting = await Promise.all(
      entryPoints.map((ep) => svc.debug.dumpMempool('ethereum-devnet', ep.address)),
    )
    if (waiting.every((w) => w.length === 0)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  process.stdout.write('drained\n')
}
// Killed by the test (SIGKILL), never stopped cleanly.
setInterval(() => {}, 60_000)
