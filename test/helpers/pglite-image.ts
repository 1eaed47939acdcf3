import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { Kysely } from 'kysely'
import { migrate } from '../../src/storage/migrate.ts'
import { halyardCacheDir } from '../../src/storage/pglite-datadir.ts'
import { PGliteDialect } from '../../src/storage/pglite-driver.ts'
import type { Database } from '../../src/storage/schema.ts'

/**
 * A migrated, empty PGlite data dir as one image (PGlite's `dumpDataDir`), so a test's in-memory
 * database starts from it instead of running initdb and every migration: seconds per open, and
 * the suite opens hundreds. Made once per PGlite version and migration set (in a child process:
 * initdb grows WebAssembly memory a process never gives back) by the suite's global setup, and
 * kept beside the PGlite data-dir template (src/storage/pglite-datadir.ts). Tests still run
 * `migrate` after opening; without an image they fall back to initdb.
 */

const ROOT = path.resolve(import.meta.dirname, '../..')
const require = createRequire(import.meta.url)

/** Where the image for the current PGlite version and migrations lives. */
export function pgliteImagePath(): string {
  const hash = createHash('sha256')
  const pkg = path.join(path.dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json')
  hash.update(readFileSync(pkg))
  // Every file that decides the schema: the migrations (wherever a feature keeps its own) and
  // the runner. A stale image would only cost time: `migrate` applies what it lacks.
  for (const file of migrationFiles(path.join(ROOT, 'src')).sort()) {
    hash.update(`${path.relative(ROOT, file)}\0`)
    hash.update(readFileSync(file))
  }
  return path.join(halyardCacheDir(), `test-pglite-image-${hash.digest('hex').slice(0, 16)}.tar`)
}

function migrationFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) migrationFiles(full, out)
    else if (/migrat/.test(path.relative(ROOT, full)) && !entry.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}

let loaded: Blob | undefined | null = null

/** The image as PGlite takes it (read once per test file's module graph); undefined when absent. */
export function pgliteImage(): Blob | undefined {
  if (loaded === null) {
    const file = pgliteImagePath()
    loaded = existsSync(file) ? new Blob([readFileSync(file)]) : undefined
  }
  return loaded
}

/** Makes the image unless it is there (the suite's global setup calls this). */
export async function ensurePGliteImage(): Promise<void> {
  const file = pgliteImagePath()
  if (existsSync(file)) return
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, file], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const code = await new Promise<number | null>((r) => child.once('exit', r))
  // Without an image the tests still run, each with its own initdb.
  if (code !== 0)
    process.stderr.write(`no PGlite test image (exit ${code}): every test database runs initdb\n`)
}

/** In the child: a fresh in-memory PGlite, migrated, dumped beside `file` and renamed onto it. */
async function buildImage(file: string): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite')
  const pglite = new PGlite()
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) })
  await migrate(db)
  const image = await pglite.dumpDataDir('none')
  const tmp = `${file}.tmp-${process.pid}`
  writeFileSync(tmp, new Uint8Array(await image.arrayBuffer()))
  renameSync(tmp, file)
  await db.destroy()
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const target = process.argv[2]
  if (!target) throw new Error('usage: pglite-image.ts <file>')
  await buildImage(target)
}
