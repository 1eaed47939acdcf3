import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { compileSol, solcLoaded } from './demo-contracts/compile.ts'

const require = createRequire(import.meta.url)

const src = (p: string) => pathToFileURL(path.resolve(import.meta.dirname, '..', p)).href

// Runs the real `halyard dev` (src/cli/dev.ts) in a fresh process, so its module registry is
// its own; when the banner is printed it reports whether solc was loaded, then stops itself
// with SIGINT as Ctrl-C would (anvil dumps its state to the data dir on the way out).
const PROBE = `
import { createRequire } from 'node:module'
const { dev } = await import(${JSON.stringify(src('cli/dev.ts'))})
const { solcLoaded } = await import(${JSON.stringify(src('devnet/demo-contracts/compile.ts'))})
const { loadEnv } = await import(${JSON.stringify(src('config/env.ts'))})
const require = createRequire(process.cwd() + '/')
const print = console.log
console.log = (...args) => {
  print(...args)
  if (!String(args[0]).includes('Halyard is running')) return
  const inRegistry = Object.keys(require.cache).some((f) => f.includes('/node_modules/solc/'))
  print('SOLC ' + JSON.stringify({ flag: solcLoaded(), inRegistry }))
  process.kill(process.pid, 'SIGINT')
}
await dev(loadEnv(), { blockTime: 0 })
process.exit(0)
`

interface Probe {
  flag: boolean
  inRegistry: boolean
}

function startDev(dataDir: string): Promise<Probe> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: {
      ...process.env,
      HALYARD_DATA_DIR: dataDir,
      HALYARD_PORT: '0',
      HALYARD_LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      REDIS_URL: '',
      HALYARD_SECRET_KEY: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString()
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const m = /^SOLC (.+)$/m.exec(out)
      if (code === 0 && m) resolve(JSON.parse(m[1]!) as Probe)
      else reject(new Error(`dev exited ${code} without the probe line:\n${out}`))
    })
  })
}

describe('halyard dev start-up footprint', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-footprint-test-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it('neither a first nor a second start loads solc into Halyard’s process', {
    timeout: 240_000,
  }, async () => {
    // The first start deploys Multicall3 onto the new chain from the compile cache (a miss
    // compiles in a child process); the second finds it on the kept chain and compiles nothing.
    expect(await startDev(dataDir)).toEqual({ flag: false, inRegistry: false })
    expect(await startDev(dataDir)).toEqual({ flag: false, inRegistry: false })
  })

  it('a compile-cache miss compiles in a child process and fills the cache', {
    timeout: 180_000,
  }, async () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'halyard-solc-cache-'))
    const before = process.env.HALYARD_CACHE_DIR
    process.env.HALYARD_CACHE_DIR = cache
    try {
      const compiled = compileSol('Multicall3.sol').Multicall3
      expect(compiled?.deployedBytecode).toMatch(/^0x[0-9a-f]{100,}$/)
      expect(solcLoaded()).toBe(false)
      expect(Object.keys(require.cache).some((f) => f.includes('/node_modules/solc/'))).toBe(false)
      expect(readdirSync(path.join(cache, 'solc'))).toEqual([
        expect.stringMatching(/^Multicall3-[0-9a-f]{16}\.json$/),
      ])
    } finally {
      if (before === undefined) delete process.env.HALYARD_CACHE_DIR
      else process.env.HALYARD_CACHE_DIR = before
      rmSync(cache, { recursive: true, force: true })
    }
  })
})
