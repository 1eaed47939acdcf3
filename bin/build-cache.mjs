// The sources as one prebuilt JavaScript module graph, made on first start and whenever a source
// changes: no build step between `npm ci` and `npm start`, and no TypeScript loader at run time.
// Running through tsx instead costs every process a module-hooks thread (~30 MB) and a transform
// per file at start (issue 20). Built with the esbuild that tsx already brings; when a build is not
// possible (read-only install, esbuild missing) the caller falls back to tsx.
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

/** Builds kept besides the current one (another checkout's processes may still run an older one). */
const KEEP_OLD = 2

/** Every source file the server can load: src/**.ts except tests and test fixtures. */
function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) sources(full, out)
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(full)
    // Non-TypeScript files (dashboard assets, Solidity) are read from src/ at run time.
  }
  return out
}

/**
 * Names the build of these sources: every file's path, size and modification time, the
 * package manifest and this builder. A source edit, a checkout or an upgrade makes a new name.
 */
export function fingerprint(root) {
  const hash = createHash('sha256')
  for (const file of sources(path.join(root, 'src')).sort()) {
    const s = statSync(file)
    hash.update(`${path.relative(root, file)}\0${s.size}\0${s.mtimeMs}\n`)
  }
  hash.update(readFileSync(path.join(root, 'package.json')))
  hash.update(readFileSync(new URL(import.meta.url)))
  return hash.digest('hex').slice(0, 16)
}

/**
 * The source's own `import.meta` (its URL, directory, file name), written in as literals: the
 * bundle lives elsewhere, but assets, artifacts and `createRequire` are found beside the source.
 */
const importMetaPlugin = {
  name: 'halyard-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const contents = readFileSync(args.path, 'utf8')
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
      return { contents, loader: 'ts' }
    })
  },
}

/**
 * Bundles `entry` (and the sources it imports; packages stay external) into `outdir` as the
 * server's prebuilt copy is made. The benches build their server children the same way, so
 * what they measure is what `halyard serve` runs, not the sources through a loader.
 */
export async function bundle(entry, outdir) {
  const { build } = await import('esbuild')
  await build({
    entryPoints: [entry],
    bundle: true,
    // Lazily imported modules (the CLI's commands, Solana, tracers) stay lazy: their own chunks.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outdir,
    plugins: [importMetaPlugin],
    logLevel: 'error',
  })
}

/**
 * The entry module of the current build of `root`'s sources, built now if missing. Lives under
 * node_modules/.cache so the bundle's package imports resolve from the project's node_modules.
 * Concurrent starts (cluster workers, tests) each build into their own directory and rename it
 * into place; the first rename wins and the others use it.
 */
export async function ensureBuild(root, entry = 'src/cli/main.ts') {
  const builds = path.join(root, 'node_modules', '.cache', 'halyard', 'build')
  const name = fingerprint(root)
  const dir = path.join(builds, name)
  const main = path.join(dir, `${path.basename(entry, '.ts')}.js`)
  try {
    statSync(main)
    return main
  } catch {}
  const tmp = path.join(builds, `.tmp-${name}-${process.pid}`)
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(builds, { recursive: true })
  await bundle(path.join(root, entry), tmp)
  try {
    renameSync(tmp, dir)
  } catch {
    // Another process put the same build in place first.
    rmSync(tmp, { recursive: true, force: true })
  }
  try {
    pruneOld(builds, name)
  } catch {}
  return main
}

/** A build directory left by a process killed mid-build is removed after this long. */
const ABANDONED_MS = 10 * 60_000

function pruneOld(builds, current) {
  // Best effort, and raced by other starts: a `.tmp-` directory listed here may be renamed into
  // place or removed before it is looked at. Pruning never fails a start.
  const entries = readdirSync(builds).flatMap((n) => {
    const s = statSync(path.join(builds, n), { throwIfNoEntry: false })
    return s ? [{ n, t: s.mtimeMs }] : []
  })
  const abandoned = entries.filter((e) => e.n.startsWith('.tmp-') && Date.now() - e.t > ABANDONED_MS)
  const old = entries
    .filter((e) => e.n !== current && !e.n.startsWith('.tmp-'))
    .sort((a, b) => b.t - a.t)
    .slice(KEEP_OLD)
  for (const { n } of [...abandoned, ...old]) rmSync(path.join(builds, n), { recursive: true, force: true })
}
