/**
 * The pause between two rounds of a polling loop, cut short by `wake()` or by `stop` aborting.
 * A wake that arrives while a round is running is kept, so the next pause is skipped: work that
 * committed just after the round looked is not left waiting a whole interval. A wake may carry
 * a reason (the indexer's head signals say which push arrived); the pause answers with it.
 */
export class WakeSignal<R extends string = 'wake'> {
  private pending: R | 'wake' | undefined
  private endSleep: ((reason: R | 'wake') => void) | undefined

  /** `unref`: a pause does not keep the process alive (a flush timer beside a server). */
  constructor(
    private readonly stop?: AbortSignal,
    private readonly unref = false,
  ) {}

  /** Call at the start of each round: wakes before this point are served by the round. */
  beginRound(): void {
    this.pending = undefined
  }

  wake(reason?: R): void {
    const why = reason ?? 'wake'
    const end = this.endSleep
    // A sleeper takes the wake; otherwise it waits for the next pause.
    if (end) end(why)
    else this.pending = why
  }

  /** `'timeout'` after `ms`; the wake's reason when woken; `'stop'` once `stop` aborted. */
  sleep(ms: number): Promise<R | 'wake' | 'timeout' | 'stop'> {
    const stop = this.stop
    if (stop?.aborted) return Promise.resolve('stop')
    const pending = this.pending
    if (pending) {
      this.pending = undefined
      return Promise.resolve(pending)
    }
    return new Promise((resolve) => {
      const finish = (reason: R | 'wake' | 'timeout' | 'stop') => {
        clearTimeout(timer)
        stop?.removeEventListener('abort', onStop)
        if (this.endSleep === finish) this.endSleep = undefined
        resolve(reason)
      }
      const onStop = () => finish('stop')
      const timer = setTimeout(() => finish('timeout'), ms)
      if (this.unref) timer.unref()
      stop?.addEventListener('abort', onStop)
      this.endSleep = finish
    })
  }
}
