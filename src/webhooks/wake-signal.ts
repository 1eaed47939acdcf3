/**
 * The pause between two rounds of a polling loop, cut short by `wake()`. A wake that arrives
 * while a round is running is kept, so the next pause is skipped: work that committed just after
 * the round looked is not left waiting a whole interval.
 */
export class WakeSignal {
  private pending = false
  private endSleep: (() => void) | undefined

  /** Call at the start of each round: wakes before this point are served by the round. */
  beginRound(): void {
    this.pending = false
  }

  wake(): void {
    this.pending = true
    this.endSleep?.()
  }

  sleep(ms: number): Promise<void> {
    if (this.pending) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        if (this.endSleep === done) this.endSleep = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.endSleep = done
    })
  }
}
