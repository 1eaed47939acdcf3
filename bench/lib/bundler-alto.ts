/**
 * Alto (@pimlico/alto) for bench:bundler: installed on first use into .bench-deps/alto
 * (git-ignored; not a project dependency: 36 MB and its own lockfile churn for every `npm ci`),
 * then run as its own process against the bench's anvil in unsafe mode (its safe mode does not
 * run on anvil).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import type { Address, Hex } from '../../src/types.ts'
import { jsonRpc } from './bundler-load.ts'

const ALTO_VERSION = '0.0.20'
const ALTO_PREFIX = path.resolve(import.meta.dirname, '../../.bench-deps/alto')
const ALTO_CLI = path.join(ALTO_PREFIX, 'node_modules/@pimlico/alto/esm/cli/alto.js')

/** Installs Alto beside the project (not into it) when missing; a message when that fails. */
function ensureAlto(): string | undefined {
  if (existsSync(ALTO_CLI)) return undefined
  console.log(`installing @pimlico/alto@${ALTO_VERSION} into .bench-deps/alto (first run only)…`)
  const r = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-audit',
      '--no-fund',
      '--prefix',
      ALTO_PREFIX,
      `@pimlico/alto@${ALTO_VERSION}`,
    ],
    { stdio: 'inherit' },
  )
  return r.status === 0 && existsSync(ALTO_CLI)
    ? undefined
    : `could not install @pimlico/alto@${ALTO_VERSION}`
}

/** Alto listening, or why not. `executorKey` and `utilityKey` must be funded anvil accounts. */
export async function startAlto(
  anvilUrl: string,
  entryPoints: Address[],
  keys: { executor: Hex; utility: Hex },
): Promise<{ url: string; child: ChildProcess } | string> {
  const missing = ensureAlto()
  if (missing) return missing
  const port = 14_000 + Math.floor(Math.random() * 1000)
  const child = spawn(
    process.execPath,
    [
      ALTO_CLI,
      '--entrypoints',
      entryPoints.join(','),
      '--rpc-url',
      anvilUrl,
      '--executor-private-keys',
      keys.executor,
      '--utility-private-key',
      keys.utility,
      '--port',
      String(port),
      '--safe-mode',
      'false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 600; i++) {
    try {
      await jsonRpc({ url }, 'eth_chainId', [])
      return { url, child }
    } catch {
      if (child.exitCode !== null) return `alto exited: ${out.slice(-500)}`
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  child.kill('SIGKILL')
  return `alto did not answer within 60 s: ${out.slice(-500)}`
}
