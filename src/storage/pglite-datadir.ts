import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const require = createRequire(import.meta.url)

/** How a PGlite data dir came to be ready: already there, copied from the template, or a fresh initdb. */
export type DataDirOrigin = 'existing' | 'template' | 'initdb'

/**
 * Makes `dir` an initialised PGlite data dir without running initdb in this process. initdb
 * grows PGlite's WebAssembly memory to ~800 MB and a process never gets WebAssembly memory back,
 * so an in-process first start held 1 GB for its whole life. Here initdb runs in a short-lived
 * child process (its memory goes with it), once per PGlite version and user: the result is kept
 * as a template under the cache dir and later first starts copy it (~40 MB of files, well under
 * a second). An unwritable cache only costs the copy: the child then initialises `dir` directly.
 */
export async function preparePGliteDataDir(
  dir: string,
  cacheRoot = halyardCacheDir(),
): Promise<DataDirOrigin> {
  if (isInitialised(dir)) return 'existing'
  // Something that is not a data dir sits there (a crash inside initdb?): let initdb decide.
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    await initdbInChild(dir)
    return 'initdb'
  }
  const template = path.join(cacheRoot, `pgdata-template-${templateKey()}`)
  let origin: DataDirOrigin = 'template'
  if (!isInitialised(template)) {
    try {
      mkdirSync(cacheRoot, { recursive: true, mode: 0o700 })
      await initdbAtomically(template)
      origin = 'initdb'
    } catch {
      await initdbInChild(dir)
      return 'initdb'
    }
  }
  // Copy beside the target and rename, so a crash mid-copy never leaves a half data dir.
  const tmp = `${dir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  try {
    cpSync(template, tmp, { recursive: true })
    rmSync(dir, { recursive: true, force: true })
    renameSync(tmp, dir)
  } catch (err) {
    // A disk that fills mid-copy must not keep a half copy (a new one per attempt, per pid).
    rmSync(tmp, { recursive: true, force: true })
    throw new Error(`cannot prepare the PGlite data dir ${dir}: ${(err as Error).message}`, { cause: err })
  }
  return origin
}

/**
 * Makes a data dir private to its owner, on every start: the dir and every dir below 0700, every
 * file 0600. The database holds account e-mails, key hashes and encrypted secrets; PGlite's
 * files are made with whatever mode its WebAssembly file layer and the umask give (0666 under a
 * 0000 umask), and a dir from an earlier start may be 0755. Symbolic links are left as they are
 * (never followed). Returns how many entries it had to change.
 */
export function tightenDataDir(dir: string): number {
  let changed = 0
  const walk = (p: string) => {
    const st = lstatSync(p)
    if (st.isSymbolicLink()) return
    const want = st.isDirectory() ? 0o700 : 0o600
    if ((st.mode & 0o777) !== want) {
      chmodSync(p, want)
      changed++
    }
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name))
  }
  if (existsSync(dir)) walk(dir)
  return changed
}

/** $HALYARD_CACHE_DIR, else $XDG_CACHE_HOME/halyard, else ~/.cache/halyard: per user, not a shared /tmp. */
export function halyardCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HALYARD_CACHE_DIR) return path.resolve(env.HALYARD_CACHE_DIR)
  const base = env.XDG_CACHE_HOME ? env.XDG_CACHE_HOME : path.join(homedir(), '.cache')
  return path.join(base, 'halyard')
}

function isInitialised(dir: string): boolean {
  return existsSync(path.join(dir, 'PG_VERSION'))
}

/** PGlite's version: another version may lay out its data dir differently, so it gets its own template. */
function templateKey(): string {
  const pkg = path.join(path.dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json')
  const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }
  return `${version}-${createHash('sha256').update(version).digest('hex').slice(0, 8)}`
}

async function initdbAtomically(target: string): Promise<void> {
  const tmp = `${target}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  try {
    await initdbInChild(tmp)
    try {
      renameSync(tmp, target)
    } catch (err) {
      // Another process won the race; its template is as good as ours.
      if (!isInitialised(target)) throw err
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

// A bare Node process (no tsx, no Halyard code): opening PGlite on an empty dir runs initdb.
const INITDB_SCRIPT = `
const [url, dir] = process.argv.slice(1)
const { PGlite } = await import(url)
const pg = new PGlite(dir)
await pg.waitReady
await pg.close()
`

function initdbInChild(dir: string): Promise<void> {
  const url = pathToFileURL(require.resolve('@electric-sql/pglite')).href.replace(/\.cjs$/, '.js')
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', INITDB_SCRIPT, url, dir], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000)
    })
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (code === 0 && isInitialised(dir)) resolve()
      else
        reject(new Error(`PGlite initdb for ${dir} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`))
    })
  })
}
