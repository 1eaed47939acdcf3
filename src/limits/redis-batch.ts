import type { LimitCost, LimitDecision } from './limiter.ts'
import type { PlanLimits } from './plans.ts'

/*
 * How the Redis limiter packs one event-loop turn's calls into script runs (redis-scripts.ts
 * describes the script's KEYS and ARGV): calls grouped per account, second and limits, groups
 * cut into batches, each batch encoded as one script call.
 */

export interface Pending {
  cost: LimitCost
  nowMs: number
  resolve(d: LimitDecision): void
  reject(err: unknown): void
}

/** One account's calls in one second (and day) with one set of limits, within a flush. */
export interface Group {
  accountId: string
  second: number
  day: number
  limits: PlanLimits
  calls: Pending[]
  /** Unspent lease of this account and second, subtracted before the calls are decided. */
  back: { requests: number; computeUnits: number }
  /** The lease to reserve after the calls (lease.ts), if any. */
  want: { requests: number; computeUnits: number } | undefined
}

/** Calls per script run: bounds the script's time inside Redis (it blocks other clients). */
const MAX_BATCH = 256

export const sameLimits = (a: PlanLimits, b: PlanLimits) =>
  a === b ||
  (a.requestsPerSecond === b.requestsPerSecond &&
    a.requestsPerDay === b.requestsPerDay &&
    a.computeUnitsPerSecond === b.computeUnitsPerSecond)

export const finite = (n: number) => (Number.isFinite(n) ? n : 0)

/**
 * Cuts a turn's groups into script runs of at most MAX_BATCH calls. A group larger than a batch
 * is split: its parts run in order and see each other's counts; the first part gives back, the
 * last asks for the lease.
 */
export function batchesOf(groups: readonly Group[]): Group[][] {
  const batches: Group[][] = []
  let batch: Group[] = []
  let size = 0
  for (const g of groups) {
    const n = Math.max(1, Math.ceil(g.calls.length / MAX_BATCH))
    for (let i = 0; i < n; i++) {
      const part =
        n === 1
          ? g
          : {
              ...g,
              calls: g.calls.slice(i * MAX_BATCH, (i + 1) * MAX_BATCH),
              back: i === 0 ? g.back : { requests: 0, computeUnits: 0 },
              want: i === n - 1 ? g.want : undefined,
            }
      if (size > 0 && size + part.calls.length > MAX_BATCH) {
        batches.push(batch)
        batch = []
        size = 0
      }
      batch.push(part)
      size += part.calls.length
    }
  }
  if (batch.length > 0) batches.push(batch)
  return batches
}

/** The limits script's KEYS and ARGV for one batch, with Redis's `deadline` first. */
export function scriptCall(
  prefix: string,
  batch: readonly Group[],
  deadline: number,
): { keys: string[]; args: number[] } {
  const keys: string[] = []
  const args: number[] = [deadline]
  for (const g of batch) {
    const { limits } = g
    keys.push(`${prefix}:${g.accountId}:s:${g.second}`, `${prefix}:${g.accountId}:d:${g.day}`)
    args.push(
      limits.requestsPerSecond ?? -1,
      limits.requestsPerDay ?? -1,
      limits.computeUnitsPerSecond ?? -1,
      g.back.requests,
      g.back.computeUnits,
      g.want?.requests ?? 0,
      g.want?.computeUnits ?? 0,
      0,
    )
    const runsAt = args.length - 1
    let runs = 0
    let run = -1 // where in args the current run's call count is
    for (const { cost } of g.calls) {
      if (run >= 0 && args[run + 1] === cost.requests && args[run + 2] === cost.computeUnits) {
        args[run] = (args[run] ?? 0) + 1
      } else {
        run = args.length
        args.push(1, cost.requests, cost.computeUnits)
        runs++
      }
    }
    args[runsAt] = runs
  }
  return { keys, args }
}
