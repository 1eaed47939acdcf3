import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ensureDir } from '../cli/data-dir.ts'
import { openStorage } from './database.ts'

/** Every entry below `dir` (itself included) whose mode is not private: dirs 0700, files 0600. */
function loose(dir: string): string[] {
  const out: string[] = []
  const walk = (p: string) => {
    const st = lstatSync(p)
    const want = st.isDirectory() ? 0o700 : 0o600
    if ((st.mode & 0o777) !== want)
      out.push(`${path.relative(dir, p) || '.'} ${(st.mode & 0o777).toString(8)}`)
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name))
  }
  walk(dir)
  return out
}

function loosen(dir: string, counted: { n: number }) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      chmodSync(p, 0o755)
      loosen(p, counted)
    } else {
      chmodSync(p, counted.n % 2 === 0 ? 0o644 : 0o666)
    }
    counted.n++
  }
}

describe('PGlite data dir modes', () => {
  it('an existing data dir with 0755 dirs and 0644/0666 files is made private on start', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-modes-'))
    const first = await openStorage({ dataDir })
    await first.close()
    expect(loose(dataDir)).toEqual([])

    // As an earlier version (or a 0000 umask) left it.
    chmodSync(dataDir, 0o755)
    const counted = { n: 0 }
    loosen(dataDir, counted)
    writeFileSync(path.join(dataDir, 'pgdata', 'stray.txt'), 'x', { mode: 0o666 })
    chmodSync(path.join(dataDir, 'pgdata', 'stray.txt'), 0o666)
    expect(counted.n).toBeGreaterThan(100)
    expect(loose(dataDir).length).toBeGreaterThan(100)

    const again = await openStorage({ dataDir })
    try {
      // PGlite rewrites its relation-cache init files at start, under the process umask (the CLI
      // sets 077; a test worker cannot): private once closed. Everything else is private now.
      expect(loose(dataDir).filter((l) => !/pg_internal\.init /.test(l))).toEqual([])
    } finally {
      await again.close()
    }
    expect(loose(dataDir)).toEqual([])
  }, 120_000)

  it("the CLI's data dir is tightened to 0700 when it already exists", () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'halyard-modes-')), 'data')
    mkdirSync(dir, { mode: 0o755 })
    chmodSync(dir, 0o755)
    ensureDir(dir)
    expect(lstatSync(dir).mode & 0o777).toBe(0o700)
  })
})
