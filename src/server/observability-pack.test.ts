import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { spawnHalyard } from '../../test/helpers/cli.ts'

const deploy = path.resolve(import.meta.dirname, '../../deploy')

/**
 * Families a dev server on PGlite does not export: the database watch runs on PostgreSQL only
 * (src/server/database-watch.ts), and is checked to declare them instead.
 */
const POSTGRES_ONLY = ['halyard_database_up']

/** Every halyard_* metric family an expression names (histogram series map to their family). */
function familiesIn(text: string): Set<string> {
  const names = text.match(/halyard_[a-z0-9_]+/g) ?? []
  return new Set(names.map((n) => n.replace(/_(bucket|sum|count)$/, '')))
}

describe('the observability pack (deploy/grafana, deploy/prometheus)', () => {
  it('names only metric families a running halyard dev exports', async () => {
    const dashboard = readFileSync(path.join(deploy, 'grafana/dashboards/halyard.json'), 'utf8')
    const rules = readFileSync(path.join(deploy, 'prometheus/alerts.yml'), 'utf8')
    const used = familiesIn(dashboard + rules)
    expect(used.size).toBeGreaterThan(20)
    const parsed = JSON.parse(dashboard) as { panels: { targets: { expr: string }[] }[] }
    expect(parsed.panels.every((p) => p.targets.length > 0)).toBe(true)

    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-obs-'))
    const server = spawnHalyard(['dev'], { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' })
    try {
      const [, baseUrl] = await server.waitFor(/HTTP base URL:\s+(\S+)\/v1/)
      const res = await fetch(`${baseUrl}/metrics`)
      expect(res.status).toBe(200)
      const exported = new Set([...(await res.text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]))
      const missing = [...used].filter((n) => !exported.has(n) && !POSTGRES_ONLY.includes(n))
      expect(missing).toEqual([])
      const watch = readFileSync(path.join(import.meta.dirname, 'database-watch.ts'), 'utf8')
      for (const name of POSTGRES_ONLY) expect(watch).toContain(`'${name}'`)
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0)
    }
  })
})
