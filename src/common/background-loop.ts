import type { Logger } from '../logger.ts'
import { WakeSignal } from './wake-signal.ts'

export interface BackgroundLoopOptions {
  /** Named in the line logged when a round fails. */
  failure: string
  logger: Logger
  /**
   * One round; answers how long to pause before the next (0: go again at once). `stop` aborts
   * when the loop is told to stop: a long round should end early then.
   */
  round: (stop: AbortSignal) => Promise<number>
  /** The pause after the `failures`th failed round in a row. */
  retryMs: (failures: number) => number
  /** Pauses do not keep the process alive (a periodic flush beside a server). */
  unref?: boolean
  /** Debug instead of warn: a failing round is routine for this loop (its caller reports). */
  quiet?: boolean
}

/**
 * A worker's loop: rounds until stopped, a pause between them that `wake()` cuts short, a
 * failed round logged and retried after a backoff (the loop never dies of an error), and a
 * `stop()` that waits for the round in progress to end.
 */
export class BackgroundLoop {
  private abort = new AbortController()
  private signal: WakeSignal
  private running: Promise<void> | undefined

  constructor(private readonly opts: BackgroundLoopOptions) {
    this.signal = new WakeSignal(this.abort.signal, opts.unref)
  }

  /** Starts the rounds; again after a stop(), a fresh run. */
  start(): void {
    if (this.running) return
    if (this.abort.signal.aborted) {
      this.abort = new AbortController()
      this.signal = new WakeSignal(this.abort.signal, this.opts.unref)
    }
    this.running = this.run()
  }

  /** Whether the loop runs (started, not stopped). */
  get active(): boolean {
    return this.running !== undefined && !this.abort.signal.aborted
  }

  /** Aborts once stop() is called. */
  get stopSignal(): AbortSignal {
    return this.abort.signal
  }

  /** Ends the current pause, or skips the next if a round is running. */
  wake(): void {
    this.signal.wake()
  }

  /** A pause inside a round: ends on wake() or stop(). */
  async sleep(ms: number): Promise<void> {
    await this.signal.sleep(ms)
  }

  /** Stops after the round in progress, and waits for it. */
  async stop(): Promise<void> {
    this.abort.abort()
    await this.running
    this.running = undefined
  }

  private async run(): Promise<void> {
    const stop = this.abort.signal
    const signal = this.signal
    let failures = 0
    while (!stop.aborted) {
      signal.beginRound()
      let pause: number
      try {
        pause = await this.opts.round(stop)
        failures = 0
      } catch (err) {
        if (stop.aborted) break
        failures++
        const line = { err: (err as Error).message, failures }
        if (this.opts.quiet) this.opts.logger.debug(line, this.opts.failure)
        else this.opts.logger.warn(line, this.opts.failure)
        pause = this.opts.retryMs(failures)
      }
      if (pause > 0) await signal.sleep(pause)
    }
  }
}

/**
 * A loop that does `work` every `intervalMs`, the same pause after a failed round as after a
 * good one (a periodic flush or refresh: the next round is the retry).
 */
export function periodicLoop(
  opts: Omit<BackgroundLoopOptions, 'round' | 'retryMs'> & {
    intervalMs: number
    work: () => Promise<void>
  },
): BackgroundLoop {
  const { intervalMs, work, ...rest } = opts
  return new BackgroundLoop({
    ...rest,
    round: async () => {
      await work()
      return intervalMs
    },
    retryMs: () => intervalMs,
  })
}

/** Loops started and stopped together (a worker's one loop per network); made anew at each start. */
export class LoopSet {
  private loops: BackgroundLoop[] = []

  constructor(private readonly make: () => BackgroundLoop[]) {}

  start(): void {
    if (this.loops.length > 0) return
    this.loops = this.make()
    for (const loop of this.loops) loop.start()
  }

  /** Stops every loop after its round in progress, and waits for them. */
  async stop(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()))
    this.loops = []
  }
}
