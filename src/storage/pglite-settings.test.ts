import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { loadEnv } from '../config/env.ts'
import { openStorage, type Storage } from './database.ts'
import { migrate } from './migrate.ts'
import { preparePGliteDataDir } from './pglite-datadir.ts'
import { PGLITE_DEFAULTS, type PGliteSettings, pgliteSettings } from './pglite-settings.ts'

const root = mkdtempSync(path.join(tmpdir(), 'halyard-pglite-settings-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

async function shown(storage: Storage): Promise<PGliteSettings> {
  const show = async (name: string) => {
    const r = await sql<Record<string, string>>`show ${sql.raw(name)}`.execute(storage.db)
    return r.rows[0]![name]!
  }
  return {
    sharedBuffers: await show('shared_buffers'),
    workMem: await show('work_mem'),
    maintenanceWorkMem: await show('maintenance_work_mem'),
    tempBuffers: await show('temp_buffers'),
  }
}

describe('PGlite settings', () => {
  it('opens with Halyard’s defaults, not PGlite’s (shared_buffers 128MB)', { timeout: 180_000 }, async () => {
    const storage = await openStorage({ dataDir: path.join(root, 'defaults') })
    try {
      expect(await shown(storage)).toEqual(PGLITE_DEFAULTS)
    } finally {
      await storage.close()
    }
  })

  it('takes settings from HALYARD_PGLITE_* and from the caller', { timeout: 180_000 }, async () => {
    const fromEnv = pgliteSettings({ HALYARD_PGLITE_SHARED_BUFFERS: '8MB', HALYARD_PGLITE_WORK_MEM: '2MB' })
    expect(fromEnv).toEqual({ ...PGLITE_DEFAULTS, sharedBuffers: '8MB', workMem: '2MB' })
    const storage = await openStorage({ dataDir: path.join(root, 'custom'), pglite: fromEnv })
    try {
      expect(await shown(storage)).toEqual(fromEnv)
    } finally {
      await storage.close()
    }
  })

  it('refuses a malformed size at start-up, naming the variable', () => {
    expect(() => loadEnv({ HALYARD_PGLITE_SHARED_BUFFERS: 'lots' })).toThrow(/HALYARD_PGLITE_SHARED_BUFFERS/)
    expect(() => loadEnv({ HALYARD_PGLITE_WORK_MEM: '0MB' })).toThrow(/HALYARD_PGLITE_WORK_MEM/)
    expect(() => pgliteSettings({ HALYARD_PGLITE_TEMP_BUFFERS: '1 MB' })).toThrow()
  })
})

describe('PGlite data dir preparation (initdb outside this process)', () => {
  it('runs initdb once into the template, copies it after, reuses an existing dir', {
    timeout: 240_000,
  }, async () => {
    const cache = path.join(root, 'cache')
    const a = path.join(root, 'a', 'pgdata')
    const b = path.join(root, 'b', 'pgdata')
    mkdirSync(path.dirname(a))
    mkdirSync(path.dirname(b))
    expect(await preparePGliteDataDir(a, cache)).toBe('initdb')
    expect(await preparePGliteDataDir(b, cache)).toBe('template')
    expect(await preparePGliteDataDir(b, cache)).toBe('existing')
    // A copied dir is a working database: migrations apply and data survives a reopen.
    const storage = await openStorage({ dataDir: path.join(root, 'b') })
    await migrate(storage.db)
    await sql`create table footprint_probe (x int)`.execute(storage.db)
    await sql`insert into footprint_probe values (7)`.execute(storage.db)
    await storage.close()
    const again = await openStorage({ dataDir: path.join(root, 'b') })
    try {
      expect(again.dataDirOrigin).toBe('existing')
      const r = await sql<{ x: number }>`select x from footprint_probe`.execute(again.db)
      expect(r.rows).toEqual([{ x: 7 }])
    } finally {
      await again.close()
    }
  })

  it('without a usable cache dir, initialises the data dir itself', { timeout: 240_000 }, async () => {
    const notADir = path.join(root, 'cache-is-a-file')
    writeFileSync(notADir, 'x')
    const dir = path.join(root, 'c', 'pgdata')
    mkdirSync(path.dirname(dir))
    expect(await preparePGliteDataDir(dir, notADir)).toBe('initdb')
    expect(await preparePGliteDataDir(dir, notADir)).toBe('existing')
  })
})
