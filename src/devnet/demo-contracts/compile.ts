import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Abi } from 'viem'
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

/**
 * Compiles one .sol file of this folder with solc from npm (OpenZeppelin imports resolved from
 * node_modules). solc-js takes seconds, so results are cached in memory and in the OS temp dir,
 * keyed by the source text and compiler version: no build artifacts are checked in.
 */
export function compileSol(file: string): Record<string, CompiledContract> {
  const full = path.join(import.meta.dirname, file)
  const source = readFileSync(full, 'utf8')
  const solc = require('solc') as SolcModule
  const key = createHash('sha256').update(solc.version()).update(source).digest('hex').slice(0, 16)
  const hit = memo.get(key)
  if (hit) return hit
  const cacheFile = path.join(tmpdir(), 'halyard-solc', `${path.basename(file, '.sol')}-${key}.json`)
  try {
    const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, CompiledContract>
    memo.set(key, cached)
    return cached
  } catch {}
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
    solc.compile(JSON.stringify(input), {
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
  memo.set(key, result)
  try {
    mkdirSync(path.dirname(cacheFile), { recursive: true })
    const tmp = `${cacheFile}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify(result))
    renameSync(tmp, cacheFile)
  } catch {}
  return result
}
