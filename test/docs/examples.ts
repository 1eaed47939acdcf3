import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * The shell and code examples of the README and `docs/`. Each one is marked on the line above its
 * fence: `<!-- run -->` (test/docs/examples.test.ts runs it against a real `halyard dev`) or
 * `<!-- not run: why -->` (it needs what a test cannot give it: a production deployment, a
 * browser page on another origin, a person typing). An unmarked example is a test failure, so
 * nobody adds one that silently rots.
 */
export interface Example {
  file: string
  line: number
  lang: 'sh' | 'ts' | 'js'
  run: boolean
  /** The marker's reason for a `not run` example; undefined for `run` and unmarked ones. */
  reason?: string
  marked: boolean
  code: string
}

export const REPO = path.resolve(import.meta.dirname, '../..')

const LANGS: Record<string, Example['lang']> = {
  sh: 'sh',
  bash: 'sh',
  shell: 'sh',
  ts: 'ts',
  typescript: 'ts',
  js: 'js',
  mjs: 'js',
  javascript: 'js',
}

/** README.md and every docs/*.md, as paths relative to the repository. */
export function documentationFiles(): string[] {
  const docs = readdirSync(path.join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`)
  return ['README.md', ...docs]
}

export function examplesOf(file: string): Example[] {
  const lines = readFileSync(path.join(REPO, file), 'utf8').split('\n')
  const out: Example[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\s*$/.exec(lines[i] ?? '')
    if (!open) {
      if (/^```/.test(lines[i] ?? '')) i = closingFence(lines, i)
      continue
    }
    const end = closingFence(lines, i)
    const lang = LANGS[(open[1] ?? '').toLowerCase()]
    if (lang) {
      const marker = /^<!--\s*(run|not run:\s*(.+?))\s*-->\s*$/.exec(lines[i - 1] ?? '')
      out.push({
        file,
        line: i + 1,
        lang,
        run: marker?.[1] === 'run',
        reason: marker?.[2],
        marked: marker !== null,
        code: lines.slice(i + 1, end).join('\n'),
      })
    }
    i = end
  }
  return out
}

function closingFence(lines: string[], open: number): number {
  for (let j = open + 1; j < lines.length; j++) if (/^```\s*$/.test(lines[j] ?? '')) return j
  throw new Error(`unclosed code fence at line ${open + 1}`)
}
