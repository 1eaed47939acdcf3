/**
 * How steady the machine's speed is, told before a bench's timed rows: the same fixed work timed
 * in short windows inside this process, while nothing of the bench runs. On a VM
 * whose host lends it cycles unevenly the work per window swings (docs/benchmarks.md saw one run
 * at two speeds, ≈ 1.6× apart, in stretches of 0.1–0.4 s); ratios timed on such a machine move
 * with it, whatever alternating rounds cancels. The work is native (SHA-256 of a fixed block), so
 * its speed is the machine's and not the JIT's: a loop of JavaScript may or may not be optimised
 * by the time it is timed, which moved one such loop's time by 4×.
 */
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'

export interface Steadiness {
  readonly windowMs: number
  /** Units of fixed work done in each window. */
  readonly perWindow: readonly number[]
  /** (max − min) / median of the windows' work. */
  readonly spread: number
}

/** A spread past this is more than the few-per-cent changes the timed benches are asked to tell. */
export const UNSTEADY_SPREAD = 0.1

const BLOCK = Buffer.alloc(16 * 1024, 0x5a)

/** A unit of fixed work: one SHA-256 of a 16 KiB block. */
function unit(): void {
  createHash('sha256').update(BLOCK).digest()
}

/** Runs units back to back for `windows` windows of `windowMs` each; counts the units per window. */
export function measureSteadiness(windows = 10, windowMs = 100): Steadiness {
  // Also lets what the bench just started (anvil) settle.
  const warm = performance.now() + 300
  while (performance.now() < warm) unit()
  const perWindow: number[] = []
  for (let w = 0; w < windows; w++) {
    const end = performance.now() + windowMs
    let n = 0
    while (performance.now() < end) {
      unit()
      n++
    }
    perWindow.push(n)
  }
  const sorted = [...perWindow].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]!
  return { windowMs, perWindow, spread: (sorted.at(-1)! - sorted[0]!) / median }
}

const percent = (x: number) => `${(x * 100).toFixed(0)} %`

/** A line for a bench's output; says so when the spread is past what a few-per-cent change survives. */
export function formatSteadiness(s: Steadiness): string {
  const lo = Math.min(...s.perWindow)
  const hi = Math.max(...s.perWindow)
  const verdict = s.spread > UNSTEADY_SPREAD ? ': unsteady, timed ratios here move with the machine' : ''
  return `machine steadiness: fixed work per ${s.windowMs} ms window ${lo}–${hi}, spread ${percent(s.spread)}${verdict}`
}

/** The line for a whole run: the smallest and largest spread of its checks, and what past the threshold means. */
export function summarizeSteadiness(checks: readonly Steadiness[]): string {
  const spreads = checks.map((s) => s.spread)
  const hi = Math.max(...spreads)
  const verdict =
    hi > UNSTEADY_SPREAD
      ? ` (past ${percent(UNSTEADY_SPREAD)}: the machine moved by more than the changes the ratios below are asked to tell)`
      : ''
  return `machine steadiness before the rounds: spread ${percent(Math.min(...spreads))}–${percent(hi)}${verdict}`
}
