import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import YAML from 'yaml'
import { configFileKeys, environmentKeys, renderConfigReference } from './config-reference.ts'

const root = path.resolve(import.meta.dirname, '../..')

/** Every key path a YAML document sets, in the reference's spelling (`networks[].gateway.hedge`). */
function pathsIn(value: unknown, prefix: string, out: Set<string>): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) pathsIn(item, `${prefix}[]`, out)
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const p = prefix === '' ? key : `${prefix}.${key}`
      out.add(p)
      pathsIn(child, p, out)
    }
  }
  return out
}

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` generates from the schemas (run it after changing a schema)', () => {
    const committed = readFileSync(path.join(root, 'docs/configuration.md'), 'utf8')
    expect(committed).toBe(renderConfigReference())
  })

  it('describes every key of the config file and every environment variable', () => {
    const keys = [...configFileKeys(), ...environmentKeys()]
    expect(keys.length).toBeGreaterThan(100)
    expect(keys.filter((k) => !k.description).map((k) => k.path)).toEqual([])
    // Spot checks that the walk reached nested, defaulted and union keys.
    const byPath = new Map(configFileKeys().map((k) => [`${k.variant ?? ''}${k.path}`, k]))
    expect(byPath.get('networks[].indexer.historyScans.concurrency')?.default).toBe('2')
    expect(byPath.get('networks[].upstreams[].url')?.required).toBe(true)
    expect(byPath.get('source: chainlinknetworks[].data.prices.maxAgeSeconds')?.default).toBe('86400')
    expect(environmentKeys().find((k) => k.path === 'HALYARD_REDIS_TIMEOUT')?.default).toBe('"500ms"')
  })
})

describe('deploy/halyard.example.yaml', () => {
  it('sets every key of the config file (deprecated aliases aside)', () => {
    const example = YAML.parse(readFileSync(path.join(root, 'deploy/halyard.example.yaml'), 'utf8'))
    const set = pathsIn(example, '', new Set())
    const missing = configFileKeys()
      .filter((k) => !k.description?.startsWith('Deprecated'))
      .map((k) => k.path)
      .filter((p) => !set.has(p))
    expect(missing).toEqual([])
  })
})
