import type { RpcOutcome } from '../jsonrpc.ts'
import { UpstreamError } from './http-upstream.ts'

/** One call to one upstream within a budget; rejects with UpstreamError on transport failure. */
export type Attempt<T> = (target: T, budgetMs: number) => Promise<RpcOutcome>

/** Every upstream tried by a fan-out failed at the transport level. */
export class FanOutFailure extends Error {
  constructor(readonly errors: UpstreamError[]) {
    super(errors.map((e) => e.message).join('; '), { cause: new AggregateError(errors) })
    this.name = 'FanOutFailure'
  }
}

/**
 * Sends to `a`; if it has not answered after `hedgeAfter` ms, to `b` as well, and the first
 * answer wins. If `a` fails before the hedge is sent, its UpstreamError is rethrown (an ordinary
 * failover follows); if both were tried and both failed, FanOutFailure carries both errors.
 */
export function hedge<T>(
  a: T,
  b: T,
  attempt: Attempt<T>,
  hedgeAfter: number,
  budget: number,
  onHedge: (event: 'sent' | 'won') => void,
): Promise<{ outcome: RpcOutcome; usedSecond: boolean }> {
  return new Promise((resolve, reject) => {
    let done = false
    let pending = 1
    let usedSecond = false
    let timer: NodeJS.Timeout | undefined
    const errors: UpstreamError[] = []
    const finish = () => {
      done = true
      if (timer) clearTimeout(timer)
    }
    const fail = (err: unknown) => {
      if (done) return
      if (!(err instanceof UpstreamError)) {
        finish()
        reject(err)
        return
      }
      errors.push(err)
      if (--pending > 0) return
      finish()
      reject(usedSecond ? new FanOutFailure(errors) : err)
    }
    const win = (outcome: RpcOutcome, fromSecond: boolean) => {
      if (done) return
      finish()
      if (fromSecond) onHedge('won')
      resolve({ outcome, usedSecond })
    }
    if (hedgeAfter < budget) {
      timer = setTimeout(() => {
        if (done) return
        usedSecond = true
        pending++
        onHedge('sent')
        attempt(b, budget - hedgeAfter).then((o) => win(o, true), fail)
      }, hedgeAfter)
    }
    attempt(a, budget).then((o) => win(o, false), fail)
  })
}

/**
 * Sends to every target at once: the first successful result is the answer, so a transaction
 * is never reported failed while one node took it. A node's JSON-RPC error (nonce too low,
 * already known) is the answer only when no node accepted; FanOutFailure when none answered.
 */
export function broadcast<T>(
  targets: readonly T[],
  attempt: Attempt<T>,
  deadline: number,
): Promise<RpcOutcome> {
  return new Promise((resolve, reject) => {
    let pending = targets.length
    let firstError: RpcOutcome | undefined
    const failures: UpstreamError[] = []
    let done = false
    const settle = () => {
      if (done || --pending > 0) return
      done = true
      if (firstError) resolve(firstError)
      else reject(new FanOutFailure(failures))
    }
    for (const t of targets) {
      attempt(t, Math.max(1, deadline - Date.now())).then(
        (out) => {
          if (out.error === undefined && !done) {
            done = true
            resolve(out)
            return
          }
          firstError ??= out
          settle()
        },
        (err: unknown) => {
          if (err instanceof UpstreamError) failures.push(err)
          settle()
        },
      )
    }
  })
}
