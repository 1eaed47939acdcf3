import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { transform } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerChild, spawnHalyard } from '../helpers/cli.ts'
import { documentationFiles, type Example, examplesOf, REPO } from './examples.ts'

const execFileP = promisify(execFile)

type ExampleFailure = {
  stdout?: string
  stderr?: string
  message: string
  killed?: boolean
  signal?: string | null
}

/** What a failed example printed, and whether it was stopped for running past its time. */
function describeFailure(example: Example, err: ExampleFailure): string {
  const how = err.killed ? ` (stopped after 120 s: ${err.signal ?? 'killed'})` : ''
  return `${example.file}:${example.line} failed${how}: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`
}
const examples = documentationFiles().flatMap(examplesOf)
const runnable = examples.filter((e) => e.run)

describe('documentation examples', () => {
  it('marks every shell and code example as run or not run (with the reason)', () => {
    const unmarked = examples.filter((e) => !e.marked).map((e) => `${e.file}:${e.line}`)
    expect(unmarked, 'put <!-- run --> or <!-- not run: why --> on the line above each').toEqual([])
    for (const e of examples.filter((x) => x.marked && !x.run))
      expect(e.reason, `${e.file}:${e.line}`).toBeTruthy()
    expect(runnable.length).toBeGreaterThan(5)
    console.log(
      `documentation examples: ${runnable.length} run by this file, ${examples.length - runnable.length} marked not run`,
    )
  })

  describe('run against a real halyard dev --demo', () => {
    let server: ServerChild
    let dataDir: string
    let port: string
    const vars: Record<string, string> = {}
    const scratch = path.join(REPO, 'node_modules/.cache/halyard-doc-examples')

    beforeAll(async () => {
      dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-doc-examples-'))
      // As a reader's `npm start` runs: embedded storage in a fresh data dir. With the machine's
      // DATABASE_URL it would share the database's public schema with every earlier `halyard dev`
      // (another devnet's blocks, webhooks and bundler state): the bundler example then waited
      // for a receipt past its 120 s in CI.
      server = spawnHalyard(['dev', '--demo'], {
        HALYARD_DATA_DIR: dataDir,
        HALYARD_LOG_LEVEL: 'warn',
        DATABASE_URL: undefined,
        REDIS_URL: undefined,
      })
      const [, p] = await server.waitFor(/HTTP base URL:\s+http:\/\/127\.0\.0\.1:(\d+)\/v1/, 180_000)
      port = p ?? ''
      const [, key] = await server.waitFor(/API key:\s+(halyard_test_\w+)/)
      const [, usd] = await server.waitFor(/ERC-20\s+DUSD (0x[0-9a-fA-F]{40})/)
      const [, nft, items] = await server.waitFor(
        /ERC-721 SAIL (0x[0-9a-fA-F]{40}).*ERC-1155 ITEM (0x[0-9a-fA-F]{40})/,
      )
      Object.assign(vars, { KEY: key ?? '', ERC20: usd ?? '', ERC721: nft ?? '', ERC1155: items ?? '' })
      mkdirSync(scratch, { recursive: true })
    }, 240_000)

    afterAll(async () => {
      await server?.stop()
      if (dataDir) rmSync(dataDir, { recursive: true, force: true })
      rmSync(scratch, { recursive: true, force: true })
    })

    /** The example as a reader would run it against this server: its port, its key. */
    const localise = (code: string) =>
      code
        .replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)
        .replaceAll('halyard_test_…', vars.KEY ?? '')
        .replace(/\b(ERC20|ERC721|ERC1155)=0x…/g, (_m, name: string) => `${name}=${vars[name] ?? ''}`)

    it.each(runnable.map((e) => [`${e.file}:${e.line}`, e] as const))(
      '%s',
      async (_name, example: Example) => {
        const env = { ...process.env, ...vars, HALYARD_LOG_LEVEL: 'warn' }
        const code = localise(example.code)
        if (example.lang === 'sh') {
          // curl fails the block on any HTTP error status (and prints the error body), so an
          // example whose call is refused cannot pass.
          const prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 60 "$@"; }\n'
          const run = await execFileP('bash', ['-c', prelude + code], {
            env,
            cwd: REPO,
            timeout: 120_000,
          }).catch((err: ExampleFailure) => {
            throw new Error(describeFailure(example, err))
          })
          expect(run.stdout.length, 'the example printed nothing').toBeGreaterThan(0)
        } else {
          // A TypeScript example is compiled once and run by plain Node: under tsx's loader every
          // module viem and permissionless import went through its hooks, which tripled their
          // import time (≈ 40 s of a 50 s run on a loaded 2-core machine).
          const js =
            example.lang === 'ts' ? (await transform(code, { loader: 'ts', format: 'esm' })).code : code
          const file = path.join(scratch, `example-${example.line}.mjs`)
          writeFileSync(file, js)
          await execFileP(process.execPath, [file], { env, cwd: REPO, timeout: 120_000 }).catch(
            (err: ExampleFailure) => {
              throw new Error(describeFailure(example, err))
            },
          )
        }
      },
      // Past the 120 s each example may run (an example that sends a user operation took
      // over 60 s on a loaded 2-core CI machine).
      150_000,
    )
  })
})
