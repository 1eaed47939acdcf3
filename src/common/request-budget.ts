import { Gate } from './gate.ts'
import { sleep } from './time.ts'

export interface RequestBudgetLimits {
  /** Requests started in any one second, at most. */
  requestsPerSecond: number
  /** Requests in flight at once, at most. */
  maxConcurrency: number
}

/**
 * What one client may ask of one upstream: at most `maxConcurrency` requests in flight (a Gate)
 * and at most `requestsPerSecond` started in any second. The rate is a sliding window over the
 * last starts, not a refilling bucket: a bucket lets a full burst follow a full second, twice
 * the rate within one second, which is exactly what a provider's per-second limit refuses.
 */
export class RequestBudget {
  private readonly gate: Gate
  /** Start times (ms) of the last `requestsPerSecond` requests, oldest first. */
  private readonly starts: number[] = []
  /** Starts are granted one at a time, in arrival order. */
  private turn: Promise<void> = Promise.resolve()

  constructor(
    readonly limits: RequestBudgetLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(limits.requestsPerSecond >= 1) || !(limits.maxConcurrency >= 1))
      throw new Error('a request budget needs at least one request per second and one at a time')
    this.gate = new Gate(limits.maxConcurrency)
  }

  /** Runs `task` once a slot and a start within the rate are free. */
  run<T>(task: () => Promise<T>): Promise<T> {
    return this.gate.run(async () => {
      await this.startSlot()
      return task()
    })
  }

  private startSlot(): Promise<void> {
    const mine = this.turn.then(async () => {
      const limit = this.limits.requestsPerSecond
      if (this.starts.length >= limit) {
        const oldest = this.starts.shift() as number
        // Timers may fire a little early against performance.now(): wait until a full second.
        for (let wait = oldest + 1000 - this.now(); wait > 0; wait = oldest + 1000 - this.now())
          await sleep(Math.ceil(wait))
      }
      this.starts.push(this.now())
    })
    this.turn = mine.catch(() => {})
    return mine
  }
}
