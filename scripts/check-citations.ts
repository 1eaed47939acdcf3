// The repository stands alone, checked by `npm run lint` (and so by .ci/run): comments, test
// names and docs cite pages in docs/, README sections or public standards (EIP/ERC numbers, RFCs),
// never a private document a reader of the repository cannot open — its section numbers, its
// briefing files, its sibling folder, or tracker numbers. Prints each offending file:line.
// Run: node --import tsx scripts/check-citations.ts
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

const ROOTS = ['src', 'test', 'bench', 'scripts', 'docs', 'README.md']
const repo = path.resolve(import.meta.dirname, '..')

// Each pattern is assembled from pieces so that this file's own text never matches it.
const word = (...parts: string[]) => parts.join('')
const SPEC = word('sp', 'ec')
const RULES: { why: string; pattern: RegExp }[] = [
  {
    why: 'a private spec section number',
    pattern: new RegExp(
      `\\b${SPEC}(?:'s)?\\s+(?:section\\s+|§\\s*)?\\d|\\b${SPEC}\\s*§|\\b${SPEC}'s scale \\(section`,
      'i',
    ),
  },
  {
    why: 'an unnamed spec (name the standard or the README section)',
    pattern: new RegExp(`\\b(?:the|per the)\\s+${SPEC}\\b(?!ification)`, 'i'),
  },
  {
    why: 'a private briefing file',
    pattern: new RegExp(`\\b(?:${word('DES', 'IGN')}|${word('REFER', 'ENCE')})\\.md\\b`),
  },
  { why: 'the private sibling folder', pattern: new RegExp(`\\.\\./${word('sha', 'red')}\\b`) },
  { why: 'a tracker issue number', pattern: new RegExp(`\\b${word('iss', 'ue')}s?\\s+#?\\d`, 'i') },
]

// A citation split across two lines ("… spec" then " * 2.11 …"): the word ends one line and the
// number, after any comment marker, starts the next.
const SPLIT = new RegExp(`\\b(?:${SPEC}|${word('iss', 'ue')})$`, 'i')
const CONTINUES_WITH_NUMBER = /^\s*(?:\*|\/\/|#)?\s*(?:section\s+|§\s*|#)?\d/i

/** Text files only: a NUL byte in the first 8 KiB marks a binary (screenshots and the like). */
function isText(bytes: Buffer): boolean {
  return !bytes.subarray(0, 8192).includes(0)
}

function filesUnder(root: string): string[] {
  const full = path.join(repo, root)
  if (!statSync(full).isDirectory()) return [root]
  return readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((entry) => !entry.split(path.sep).includes('node_modules'))
    .map((entry) => path.join(root, entry))
    .filter((file) => statSync(path.join(repo, file)).isFile())
}

const findings: string[] = []
for (const root of ROOTS) {
  for (const file of filesUnder(root)) {
    const bytes = readFileSync(path.join(repo, file))
    if (!isText(bytes)) continue
    const lines = bytes.toString('utf8').split('\n')
    lines.forEach((line, i) => {
      for (const rule of RULES) {
        if (rule.pattern.test(line)) findings.push(`  ${file}:${i + 1}: ${rule.why}: ${line.trim()}`)
      }
      if (SPLIT.test(line.trimEnd()) && CONTINUES_WITH_NUMBER.test(lines[i + 1] ?? '')) {
        findings.push(`  ${file}:${i + 1}: a citation number on the next line: ${line.trim()}`)
      }
    })
  }
}

if (findings.length > 0) {
  console.error(`${findings.length} citation(s) a reader of this repository cannot follow:`)
  for (const f of findings) console.error(f)
  process.exitCode = 1
} else {
  console.log(`citations: nothing under ${ROOTS.join(', ')} cites a private document or tracker number`)
}
