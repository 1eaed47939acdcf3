// The 400-line limit on TypeScript files, checked by `npm run lint` (and so by .ci/run): a file
// past it holds more than one job and is split by job. Prints each offender with its length.
// Run: node --import tsx scripts/check-file-length.ts [max-lines]
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

const ROOTS = ['src', 'test', 'bench', 'scripts']
const max = Number(process.argv[2] ?? 400)
const repo = path.resolve(import.meta.dirname, '..')

/** Lines as `wc -l` counts them, plus a last line that lacks its newline. */
function lineCount(text: string): number {
  const newlines = text.split('\n').length - 1
  return text.length > 0 && !text.endsWith('\n') ? newlines + 1 : newlines
}

const offenders: { file: string; lines: number }[] = []
for (const root of ROOTS) {
  const entries = readdirSync(path.join(repo, root), { recursive: true, encoding: 'utf8' })
  for (const entry of entries) {
    if (!entry.endsWith('.ts') || entry.split(path.sep).includes('node_modules')) continue
    const file = path.join(root, entry)
    const lines = lineCount(readFileSync(path.join(repo, file), 'utf8'))
    if (lines > max) offenders.push({ file, lines })
  }
}

if (offenders.length > 0) {
  offenders.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file))
  console.error(`${offenders.length} TypeScript file(s) over ${max} lines (split each by job):`)
  for (const o of offenders) console.error(`  ${o.file}: ${o.lines} lines`)
  process.exitCode = 1
} else {
  console.log(`file length: every .ts file under ${ROOTS.join('/, ')}/ has at most ${max} lines`)
}
