import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Abi } from 'viem'
import { halyardCacheDir } from '../../storage/pglite-datadir.ts'
import type { Hex } from '../../types.ts'

const require = createRequire(import.meta.url)

export interface CompiledContract {
  abi: Abi
  bytecode: Hex
  deployedBytecode: Hex
}

interface SolcModule {
  version(): string
  compile(input: string, opts: { import: (p: string) => { contents: string } | { error: string } }): string
}

const memo = new Map<string, Record<string, CompiledContract>>()

let solcModule: SolcModule | undefined
/** Whether this process has loaded solc (a warm `halyard dev` must not: src/devnet/footprint.test.ts). */
export const solcLoaded = () => solcModule !== undefined

/**
 * solc-js is ~10 MB of asm.js that takes seconds and ~130 MB of RSS to load: only compileHere
 * (a child process on a cache miss) requires it; the cache key uses solc's package version,
 * read without loading it.
 */
function loadSolc(): SolcModule {
  solcModule ??= require('solc') as SolcModule
  return solcModule
}

function solcVersion(): string {
  const pkg = JSON.parse(readFileSync(require.resolve('solc/package.json'), 'utf8')) as { version: string }
  return pkg.version
}

/**
 * Compiles one .sol file of this folder with solc from npm (OpenZeppelin imports resolved from
 * node_modules). solc-js takes seconds, so results are cached in memory and in the user's cache
 * dir (HALYARD_CACHE_DIR, default ~/.cache/halyard: per user, so no other user can plant
 * bytecode there as they could in a shared /tmp), keyed by the source text and compiler version:
 * no build artifacts are checked in. On a miss solc runs in a short-lived child process, so the
 * ~130 MB it costs to load is not held by Halyard for its whole life.
 */
export function compileSol(file: string): Record<string, CompiledContract> {
  const { key, cacheFile } = cacheEntry(file)
  const hit = memo.get(key)
  if (hit) return hit
  let result: Record<string, CompiledContract>
  try {
    result = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, CompiledContract>
  } catch {
    result = compileInChild(file)
  }
  memo.set(key, result)
  return result
}

function cacheEntry(file: string): { key: string; cacheFile: string } {
  const source = readFileSync(path.join(import.meta.dirname, file), 'utf8')
  const key = createHash('sha256').update(solcVersion()).update(source).digest('hex').slice(0, 16)
  return {
    key,
    cacheFile: path.join(halyardCacheDir(), 'solc', `${path.basename(file, '.sol')}-${key}.json`),
  }
}

// Sync, like compileSol's callers: start-up waits for the bytecode either way.
function compileInChild(file: string): Record<string, CompiledContract> {
  const self = pathToFileURL(import.meta.filename).href
  const script = `const { compileHere } = await import(${JSON.stringify(self)}); process.stdout.write(JSON.stringify(compileHere(${JSON.stringify(file)})))`
  // tsx resolved from here, not from the working directory (`npx halyard` may run anywhere).
  const tsx = import.meta.resolve('tsx')
  const out = execFileSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', script], {
    maxBuffer: 64 << 20,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return JSON.parse(out) as Record<string, CompiledContract>
}

/** Compiles with solc in this process and writes the cache (what compileInChild's child runs). */
export function compileHere(file: string): Record<string, CompiledContract> {
  const { cacheFile } = cacheEntry(file)
  const full = path.join(import.meta.dirname, file)
  const source = readFileSync(full, 'utf8')
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const out = JSON.parse(
    loadSolc().compile(JSON.stringify(input), {
      import: (p) => {
        try {
          return { contents: readFileSync(require.resolve(p), 'utf8') }
        } catch {
          return { error: `not found: ${p}` }
        }
      },
    }),
  ) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts?: Record<
      string,
      Record<
        string,
        { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
      >
    >
  }
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0)
    throw new Error(`solc failed on ${file}:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
  const result: Record<string, CompiledContract> = {}
  for (const [name, c] of Object.entries(out.contracts?.[file] ?? {})) {
    result[name] = {
      abi: c.abi,
      bytecode: `0x${c.evm.bytecode.object}`,
      deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    }
  }
  try {
    mkdirSync(path.dirname(cacheFile), { recursive: true, mode: 0o700 })
    const tmp = `${cacheFile}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify(result))
    renameSync(tmp, cacheFile)
  } catch {}
  return result
}
