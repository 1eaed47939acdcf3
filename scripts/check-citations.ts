// The repository stands alone, checked by `npm run lint` (and so by .ci/run): comments, test
// names and docs cite pages in docs/, README sections or public standards (EIP/ERC numbers, RFCs),
// never a private document a reader of the repository cannot open — its section numbers, its
// briefing files, its sibling folder, or tracker numbers — nor a file of the repository that
// does not exist (a path under docs/, src/ or test/, or a relative Markdown link). Prints each
// offending file:line.
// Run: node --import tsx scripts/check-citations.ts
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

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

/** A path with a folder and a file extension: `docs/storage.md`, `src/http/route.ts`, `rpc/endpoint.ts`. */
const FILE_PATH =
  /(?<![\w/.:@~$<{-])((?:[A-Za-z0-9_.-]+\/)+[A-Za-z0-9_.-]+\.(?:ts|mts|mjs|cjs|js|md|sh|json|ya?ml|sql))(?![\w/])/g
/** A relative Markdown link target: `[text](configuration.md#keys)`. */
const MD_LINK = /\]\((?!https?:|mailto:|#)([^)\s#]+)(?:#[^)\s]*)?\)/g
/** Paths that are not the repository's: the npm tarball's layout, build output, installed packages. */
const NOT_OURS = /^(?:\.\/)?(?:package|dist|node_modules)\//

/**
 * The repository files a line cites that do not exist. A path is looked up from the repository
 * root, from src/ and deploy/ (comments name `http/route.ts`, compose files `ci/…`), and from
 * the citing file's folder; a first segment that is an installed package or this package's
 * name is an import specifier, not a file of ours.
 */
export function danglingReferences(
  file: string,
  line: string,
  exists: (repoPath: string) => boolean,
  packageName = 'halyard',
): string[] {
  const out: string[] = []
  const dir = path.dirname(file)
  for (const m of line.matchAll(FILE_PATH)) {
    const ref = m[1]!
    const first = ref.replace(/^\.\//, '').split('/')[0]!
    if (NOT_OURS.test(ref) || first === packageName || exists(path.join('node_modules', first))) continue
    const bases = ['.', 'src', 'deploy', dir]
    if (!bases.some((b) => exists(path.join(b, ref)))) out.push(ref)
  }
  if (file.endsWith('.md'))
    for (const m of line.matchAll(MD_LINK)) {
      const ref = m[1]!
      if (!exists(path.join(dir, ref))) out.push(ref)
    }
  return out
}

function check(): string[] {
  const findings: string[] = []
  const exists = (p: string) => existsSync(path.join(repo, p))
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
        for (const ref of danglingReferences(file, line, exists))
          findings.push(`  ${file}:${i + 1}: a file that does not exist: ${ref}`)
      })
    }
  }
  return findings
}

/** The rules, for the test that shows each one fails (test/citations.test.ts). */
export function citationProblems(line: string): string[] {
  return RULES.filter((r) => r.pattern.test(line)).map((r) => r.why)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) report(check())

function report(findings: string[]): void {
  if (findings.length > 0) {
    console.error(`${findings.length} citation(s) a reader of this repository cannot follow:`)
    for (const f of findings) console.error(f)
    process.exitCode = 1
  } else {
    console.log(
      `citations: nothing under ${ROOTS.join(', ')} cites a private document, a tracker number or a missing file`,
    )
  }
}
