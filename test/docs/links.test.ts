import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { documentationFiles, REPO } from './examples.ts'

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const h = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line)
    if (!h) continue
    const base = (h[1] ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

describe('documentation links', () => {
  it('every relative link in the README and docs/ names a file (and heading) that exists', () => {
    const broken: string[] = []
    for (const doc of documentationFiles()) {
      const abs = path.join(REPO, doc)
      const text = readFileSync(abs, 'utf8').replace(/```[\s\S]*?```/g, '')
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? ''
        if (/^(https?:|mailto:)/.test(target)) continue
        const [file = '', anchor] = target.split('#')
        const resolved = file === '' ? abs : path.resolve(path.dirname(abs), file)
        if (!existsSync(resolved)) broken.push(`${doc}: ${target} (no such file)`)
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor))
          broken.push(`${doc}: ${target} (no such heading)`)
      }
    }
    expect(broken).toEqual([])
  })
})
