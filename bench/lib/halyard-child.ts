/**
 * A real Halyard (PGlite, in-memory limits, indexer off unless overridden) in a child process,
 * so a bench's load generator and the server do not share an event loop. A bench file runs
 * `serveHalyardChild` when started with `--server ANVIL_URL` and `startHalyardChild` otherwise.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadEnv } from '../../src/config/env.ts'
import { type NetworkConfigInput, networkSchema } from '../../src/config/file.ts'
import { startHalyard } from '../../src/server/runtime.ts'
import { openStorage } from '../../src/storage/database.ts'

export interface HalyardChild {
  child: ChildProcess
  /** The URL the bench loads: `baseUrl` + the path the child was asked for. */
  url: string
  /** An enterprise (unthrottled) key. */
  key: string
}

/** Child side: serves `path` under the base URL, reports {url, key} to the parent, stops on disconnect. */
export async function serveHalyardChild(
  anvilUrl: string,
  urlPath: string,
  network: Partial<NetworkConfigInput> = {},
): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-'))
  const env = loadEnv({ HALYARD_LOG_LEVEL: 'warn', HALYARD_DATA_DIR: dataDir })
  const storage = await openStorage({ dataDir })
  const config = networkSchema.parse({
    chain: 'ethereum',
    network: 'devnet',
    chainId: 31337,
    confirmations: 0,
    blockTimeMs: 1000,
    upstreams: [{ url: anvilUrl }],
    // What is measured is the served path: no block follower sharing its event loop.
    indexer: { enabled: false },
    ...network,
  })
  const h = await startHalyard({ env, networks: [config], storage, secretKey: randomBytes(32), port: 0 })
  await h.ctx.auth.createAccount('bench@halyard.local', 'enterprise')
  const { key } = await h.ctx.auth.createKey({ accountEmail: 'bench@halyard.local', env: 'test' })
  const stop = async () => {
    await h.close()
    await storage.close()
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  }
  const hello = { url: `${h.baseUrl}${urlPath}`, key }
  // Run by hand (profiling: node --cpu-prof --import tsx bench/X.ts --server URL): print, stop on SIGINT.
  if (process.send) process.send(hello)
  else console.log(JSON.stringify(hello))
  process.once('disconnect', stop)
  process.once('SIGINT', stop)
}

/** Parent side: forks `script --server anvilUrl` and waits until its Halyard listens. */
export async function startHalyardChild(script: string, anvilUrl: string): Promise<HalyardChild> {
  const child = fork(script, ['--server', anvilUrl], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const msg = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { url: string; key: string }))
    child.once('exit', (code) => reject(new Error(`Halyard exited with code ${code} before listening`)))
  })
  return { child, ...msg }
}
