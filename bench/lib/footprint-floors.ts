/**
 * Floors for bench/footprint.ts, measured in the same run as Halyard: what a bare Node process,
 * Node with the tsx loader (bin/halyard.mjs runs the sources through it), a bare Node process
 * holding an open PGlite with Halyard's settings, and anvil itself take to start and hold.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { sleep } from '../../src/common/time.ts'
import { startAnvil } from '../../src/devnet/anvil.ts'
import { preparePGliteDataDir } from '../../src/storage/pglite-datadir.ts'
import { pgliteSettings, pgliteStartParams } from '../../src/storage/pglite-settings.ts'
import { descendants, rssMb, startUntil, stop } from './footprint-proc.ts'

const require = createRequire(import.meta.url)

export interface Floor {
  name: string
  readyMs: number
  rssMb: number
}

const IDLE = "console.log('ready'); setInterval(() => {}, 1e6)"

// Opens PGlite like src/storage/database.ts (same version, same start parameters) and idles.
const PGLITE_FLOOR = `
const [url, dir, params] = process.argv.slice(1)
const { PGlite } = await import(url)
const pg = new PGlite(dir, { startParams: JSON.parse(params) })
await pg.waitReady
await pg.query('select 1')
console.log('ready')
setInterval(() => {}, 1e6)
`

async function measure(name: string, args: string[], settleMs: number): Promise<Floor> {
  const s = await startUntil(process.execPath, args, { readyWhen: /^ready$/ })
  await sleep(settleMs)
  const rss = rssMb(s.pid) ?? Number.NaN
  await stop(s.child)
  return { name, readyMs: s.readyMs, rssMb: rss }
}

export async function measureFloors(settleMs: number): Promise<Floor[]> {
  const floors: Floor[] = []
  floors.push(await measure('bare node', ['-e', IDLE], settleMs))
  floors.push(await measure('node + tsx loader', ['--import', 'tsx', '-e', IDLE], settleMs))

  const url = pathToFileURL(require.resolve('@electric-sql/pglite')).href.replace(/\.cjs$/, '.js')
  const params = JSON.stringify(pgliteStartParams(pgliteSettings(), PGlite.defaultStartParams))
  const root = mkdtempSync(path.join(tmpdir(), 'halyard-footprint-floor-'))
  try {
    const warm = path.join(root, 'warm')
    await preparePGliteDataDir(warm)
    floors.push(
      await measure(
        'node + PGlite open (Halyard settings, existing data dir)',
        ['--input-type=module', '-e', PGLITE_FLOOR, url, warm, params],
        settleMs,
      ),
    )
    // PGlite's own defaults (shared_buffers 128MB), for the settings' effect.
    floors.push(
      await measure(
        'node + PGlite open (PGlite defaults, existing data dir)',
        ['--input-type=module', '-e', PGLITE_FLOOR, url, warm, JSON.stringify(PGlite.defaultStartParams)],
        settleMs,
      ),
    )
    // What every first start held before initdb moved to a child process.
    floors.push(
      await measure(
        'node + PGlite first start, initdb in-process (Halyard settings)',
        ['--input-type=module', '-e', PGLITE_FLOOR, url, path.join(root, 'cold'), params],
        settleMs,
      ),
    )
  } finally {
    rmSync(root, { recursive: true, force: true })
  }

  const t0 = performance.now()
  const anvil = await startAnvil({ chainId: 31337 })
  const readyMs = performance.now() - t0
  await sleep(settleMs)
  const pid = descendants(process.pid).find((p) => p.comm === 'anvil')?.pid
  floors.push({
    name: 'anvil start (its own process)',
    readyMs,
    rssMb: pid ? (rssMb(pid) ?? Number.NaN) : Number.NaN,
  })
  await anvil.stop()
  return floors
}
