import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import path from 'node:path'
import { bundle } from '../../bin/build-cache.mjs'

/** Set to 1: the benches' server children run the TypeScript sources through tsx instead. */
export const TSX_ENV = 'BENCH_TSX'

const ROOT = path.resolve(import.meta.dirname, '..', '..')

const builds = new Map<string, Promise<string>>()

/**
 * How a bench forks one of its server children (Halyard, the Node floors): the bench script
 * bundled as `halyard serve`'s prebuilt copy is (bin/build-cache.mjs), run by plain Node. Through
 * tsx, every named closure a request creates costs a `defineProperty` call (esbuild's keepNames),
 * which the profiles showed on Halyard's and the floors' hot paths alike, and which a user's
 * server never runs. The bundle is made once per bench run, in a temporary folder (under node_modules/.cache) removed at exit.
 */
export async function childCommand(script: string): Promise<{ file: string; execArgv: string[] }> {
  if (process.env[TSX_ENV] === '1') return { file: script, execArgv: ['--import', 'tsx'] }
  let built = builds.get(script)
  if (!built) {
    built = build(script)
    builds.set(script, built)
  }
  return { file: await built, execArgv: [] }
}

async function build(script: string): Promise<string> {
  // Inside the project, as the server's own build is: the bundle's packages resolve from there.
  const parent = path.join(ROOT, 'node_modules', '.cache', 'halyard')
  mkdirSync(parent, { recursive: true })
  const dir = mkdtempSync(path.join(parent, 'bench-build-'))
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  await bundle(script, dir)
  return path.join(dir, `${path.basename(script, path.extname(script))}.js`)
}

/**
 * BENCH_NODE_ARGS: Node flags for every server child, Halyard and the floors alike (a GC setting
 * to try, `--trace-gc`), so that a comparison stays like for like.
 */
export function benchNodeArgs(): string[] {
  return (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')
}
