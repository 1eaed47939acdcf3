/**
 * Reads V8 .cpuprofile files (node --cpu-prof) and prints where the time went: the top
 * functions by self time and the totals per package (fastify, undici, ioredis, src/rpc…).
 * Several files (a cluster's workers) are added up. A window [from, to] in microseconds of
 * the monotonic clock (process.hrtime, which V8's profile timestamps share on Linux) keeps
 * only the samples of one bench row, so one process's profile splits into its rows.
 *
 *   node --import tsx bench/lib/cpu-top.ts <file-or-dir> [top]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}

interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface Window {
  /** Microseconds, monotonic clock. */
  from: number
  to: number
}

export interface CpuTop {
  /** The window's length (or the longest profile's), ms. */
  wallMs: number
  /** Profiles read: one per process and per thread (tsx's loader thread has its own). */
  threads: number
  /** Sampled time that was not idle (program, GC, JavaScript), all threads added, ms. */
  busyMs: number
  functions: { name: string; where: string; pkg: string; ms: number }[]
  packages: { pkg: string; ms: number }[]
  /**
   * Total time per function of the project's own code (src/, bench/): its samples and its
   * callees' alike, each sample counted once per function however deep the recursion.
   */
  totals: { name: string; where: string; pkg: string; ms: number }[]
}

/** The .cpuprofile files under `target` (a file or a directory). */
export function profileFiles(target: string): string[] {
  if (!statSync(target).isDirectory()) return [target]
  return readdirSync(target)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(target, f))
}

const ROOT = process.cwd()

/** Which package (or src/ folder, or runtime bucket) a frame belongs to. */
export function packageOf(frame: CallFrame): string {
  const { url, functionName } = frame
  if (url === '') {
    if (functionName === '(idle)') return '(idle)'
    if (functionName === '(garbage collector)') return '(gc)'
    if (functionName === '(program)') return '(program)'
    return '(native)'
  }
  if (url.startsWith('node:')) return 'node:internal'
  const file =
    sourceOf(frame) ?? (url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url)
  const nm = file.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const parts = file.slice(nm + '/node_modules/'.length).split('/')
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!
  }
  const rel = path.relative(ROOT, file)
  if (rel.startsWith('..')) return file
  const parts = rel.split(path.sep)
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!
}

/**
 * A frame in a bundle (the benches run their children bundled: bench/lib/built-child.ts) mapped
 * back to its source file by the `// src/…ts` line esbuild writes above each module it inlines.
 */
function sourceOf(frame: CallFrame): string | undefined {
  if (!frame.url.includes('/.cache/halyard/')) return undefined
  const file = frame.url.startsWith('file://') ? decodeURIComponent(new URL(frame.url).pathname) : frame.url
  let marks = bundleMarks.get(file)
  if (!marks) {
    marks = []
    let text = ''
    try {
      text = readFileSync(file, 'utf8')
    } catch {}
    const lines = text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      const m = /^\/\/ ((?:src|bench)\/\S+\.ts)$/.exec(lines[i]!)
      if (m) marks.push({ line: i, source: path.join(ROOT, m[1]!) })
    }
    bundleMarks.set(file, marks)
  }
  let found: string | undefined
  for (const mark of marks) {
    if (mark.line > frame.lineNumber) break
    found = mark.source
  }
  return found
}

const bundleMarks = new Map<string, { line: number; source: string }[]>()

function whereOf(frame: CallFrame): string {
  if (frame.url === '') return ''
  const source = sourceOf(frame)
  if (source) return path.relative(ROOT, source)
  const file = frame.url.startsWith('file://') ? decodeURIComponent(new URL(frame.url).pathname) : frame.url
  const nm = file.lastIndexOf('/node_modules/')
  const short = nm >= 0 ? file.slice(nm + '/node_modules/'.length) : path.relative(ROOT, file)
  // tsx's transpiled TypeScript has no useful line numbers in a profile: the file says enough.
  return short.endsWith('.ts') ? short : `${short}:${frame.lineNumber + 1}`
}

/** Self time per function and per package over the files, inside `window` when given. */
export function cpuTop(files: readonly string[], window?: Window): CpuTop {
  const byFn = new Map<string, { name: string; where: string; pkg: string; us: number }>()
  const byPkg = new Map<string, number>()
  const byTotal = new Map<string, { name: string; where: string; pkg: string; us: number }>()
  let busy = 0
  let longest = 0
  for (const file of files) {
    const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
    longest = Math.max(longest, prof.endTime - prof.startTime)
    // What a sample's frame names, worked out once per node rather than once per sample (a
    // bundled frame's source is looked up in the bundle's module markers).
    const nodes = new Map(
      prof.nodes.map((n) => {
        const f = n.callFrame
        return [n.id, { pkg: packageOf(f), where: whereOf(f), name: f.functionName || '(anonymous)' }]
      }),
    )
    const parents = new Map<number, number>()
    for (const n of prof.nodes) for (const c of n.children ?? []) parents.set(c, n.id)
    // Each node's own-code functions on its stack (node and callers), worked out once per node.
    const stacks = new Map<number, string[]>()
    const ownStack = (id: number): string[] => {
      let keys = stacks.get(id)
      if (keys) return keys
      const parent = parents.get(id)
      keys = parent === undefined ? [] : ownStack(parent)
      const node = nodes.get(id)
      if (node && (node.pkg.startsWith('src') || node.pkg.startsWith('bench'))) {
        const key = `${node.name}\n${node.where}`
        if (!keys.includes(key)) {
          keys = [...keys, key]
          if (!byTotal.has(key)) byTotal.set(key, { ...node, us: 0 })
        }
      }
      stacks.set(id, keys)
      return keys
    }
    let t = prof.startTime
    for (let i = 0; i < prof.samples.length; i++) {
      t += prof.timeDeltas[i] ?? 0
      // A sample stands for the time until the next one.
      const us = Math.max(0, prof.timeDeltas[i + 1] ?? 0)
      if (window && (t < window.from || t > window.to)) continue
      const node = nodes.get(prof.samples[i]!)
      if (!node) continue
      const { pkg, where, name } = node
      if (pkg === '(idle)') continue
      busy += us
      byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + us)
      const key = `${name}\n${where}`
      const e = byFn.get(key)
      if (e) e.us += us
      else byFn.set(key, { name, where, pkg, us })
      for (const k of ownStack(prof.samples[i]!)) byTotal.get(k)!.us += us
    }
  }
  return {
    wallMs: (window ? window.to - window.from : longest) / 1000,
    threads: files.length,
    busyMs: busy / 1000,
    functions: [...byFn.values()]
      .sort((a, b) => b.us - a.us)
      .map(({ us, ...f }) => ({ ...f, ms: us / 1000 })),
    packages: [...byPkg.entries()].sort((a, b) => b[1] - a[1]).map(([pkg, us]) => ({ pkg, ms: us / 1000 })),
    totals: [...byTotal.values()]
      .sort((a, b) => b.us - a.us)
      .map(({ us, ...f }) => ({ ...f, ms: us / 1000 })),
  }
}

/**
 * The report: top `n` functions by self time, then every package with ≥ 0.5 % of busy time.
 * Given the number of requests the window served, each line also says µs per request, which
 * compares across runs at different rates (a share of busy time does not).
 */
export function formatCpuTop(top: CpuTop, n = 25, requests?: number): string {
  const pct = (ms: number) => `${((100 * ms) / Math.max(top.busyMs, 1e-9)).toFixed(1).padStart(5)}%`
  const per = (ms: number) =>
    requests === undefined || requests <= 0
      ? ''
      : ` ${((ms * 1000) / requests).toFixed(2).padStart(6)} µs/req`
  const lines = [
    `  busy ${top.busyMs.toFixed(0)} ms in ${top.wallMs.toFixed(0)} ms (${top.threads} profiled threads added up${requests ? `; ${Math.round(requests)} requests` : ''}); % of busy:`,
    '  self time, top functions:',
  ]
  for (const f of top.functions.slice(0, n))
    lines.push(`    ${pct(f.ms)} ${f.ms.toFixed(0).padStart(6)} ms${per(f.ms)}  ${f.name}  ${f.where}`)
  lines.push('  self time per package:')
  for (const p of top.packages) {
    if (p.ms < top.busyMs * 0.005) break
    lines.push(`    ${pct(p.ms)} ${p.ms.toFixed(0).padStart(6)} ms${per(p.ms)}  ${p.pkg}`)
  }
  if (top.totals.length > 0) {
    lines.push("  total time (own and callees'), the project's own functions:")
    for (const f of top.totals.slice(0, n))
      lines.push(`    ${pct(f.ms)} ${f.ms.toFixed(0).padStart(6)} ms${per(f.ms)}  ${f.name}  ${f.where}`)
  }
  return lines.join('\n')
}

if (import.meta.filename === path.resolve(process.argv[1] ?? '')) {
  const target = process.argv[2]
  if (!target) {
    console.error('usage: node --import tsx bench/lib/cpu-top.ts <file.cpuprofile | dir> [top]')
    process.exit(2)
  }
  console.log(formatCpuTop(cpuTop(profileFiles(target)), Number(process.argv[3] ?? 25)))
}
