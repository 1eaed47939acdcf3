import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { citationProblems, danglingReferences } from '../scripts/check-citations.ts'

/**
 * The repository-stands-alone check (scripts/check-citations.ts, run by `npm run lint`): a
 * comment or doc that cites a file that does not exist, a tracker number or a private document
 * fails it. The cited words below are assembled from pieces, so this file passes the check itself.
 */

const repo = path.resolve(import.meta.dirname, '..')
const exists = (p: string) => existsSync(path.join(repo, p))
const w = (...parts: string[]) => parts.join('')
/** A path written with `|` for `/`: made-up file names in this file are not citations. */
const p = (text: string) => text.replaceAll('|', '/')

describe('danglingReferences', () => {
  it('flags a cited file that does not exist, wherever it is looked up from', () => {
    expect(danglingReferences(p('src|a|b.ts'), p('// see docs|no-such-page.md'), exists)).toEqual([
      p('docs|no-such-page.md'),
    ])
    expect(danglingReferences(p('src|a|b.ts'), ` * (${p('src|http|gone.ts')})`, exists)).toHaveLength(1)
    expect(danglingReferences(p('src|a|b.ts'), ` * (${p('http|gone.ts')})`, exists)).toHaveLength(1)
    expect(danglingReferences(p('docs|x.md'), `[guide](${w('no-such', '.md')}#part)`, exists)).toHaveLength(1)
  })

  it('passes files that exist, from the root, src/, deploy/ or the citing folder, and import specifiers', () => {
    const ok: [string, string][] = [
      [p('src|a|b.ts'), '// docs/webhooks-verify.md and src/http/route.ts and http/route.ts'],
      [p('src|webhooks|x.ts'), p('// .|verify.ts')],
      [p('test|x.ts'), "import { Ajv2020 } from 'ajv/dist/2020.js'"],
      [p('scripts|x.sh'), 'tar -xzOf "$tgz" package/package.json; grafana/dashboards/halyard.json'],
      [p('docs|x.md'), '[storage](storage.md) and [a site](https://example.com/a/b.md)'],
    ]
    for (const [file, line] of ok) expect(danglingReferences(file, line, exists), line).toEqual([])
  })
})

describe('citationProblems', () => {
  it('flags tracker numbers and private documents', () => {
    expect(citationProblems(`// fixed for ${w('iss', 'ue')} 33`)).toHaveLength(1)
    expect(citationProblems(`// see ${w('iss', 'ue')} #12`)).toHaveLength(1)
    expect(citationProblems(`// as ${w('DES', 'IGN')}.md says`)).toHaveLength(1)
    expect(citationProblems('// see docs/storage.md and ERC-4337')).toEqual([])
  })
})

describe('scripts/check-citations.ts', () => {
  it('passes this repository, and fails a tree with a dangling citation, naming file and line', () => {
    const run = (root: string) => {
      try {
        return {
          code: 0,
          out: execFileSync(
            process.execPath,
            ['--import', 'tsx', path.join(root, 'scripts/check-citations.ts')],
            { cwd: repo, encoding: 'utf8', stdio: 'pipe' },
          ),
        }
      } catch (err) {
        const e = err as { status: number; stderr: string }
        return { code: e.status, out: e.stderr }
      }
    }
    expect(run(repo).code).toBe(0)
    const tree = mkdtempSync(path.join(tmpdir(), 'halyard-citations-'))
    for (const d of ['src', 'test', 'bench', 'scripts', 'docs']) mkdirSync(path.join(tree, d))
    copyFileSync(path.join(repo, 'scripts/check-citations.ts'), path.join(tree, 'scripts/check-citations.ts'))
    writeFileSync(path.join(tree, 'README.md'), '# x\n')
    writeFileSync(path.join(tree, p('src|a.ts')), `// fine\n// see ${p('src|missing.ts')}\n`)
    const failed = run(tree)
    expect(failed.code).toBe(1)
    expect(failed.out).toContain(`${p('src|a.ts')}:2: a file that does not exist: ${p('src|missing.ts')}`)
  })
})
