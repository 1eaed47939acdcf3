/**
 * Wakes the delivery loop when the earliest retry this process scheduled falls due, rather than
 * at the idle poll, which may have backed off to a second. Bounded: retries past the cap are
 * still found by the idle poll, at most IDLE_POLL_MAX_MS late.
 */
export class RetryAlarm {
  private timer: NodeJS.Timeout | undefined
  private due = Number.POSITIVE_INFINITY
  private dues: number[] = []
  private stopped = false

  constructor(private readonly fire: () => void) {}

  at(due: number): void {
    if (this.stopped) return
    if (this.dues.length < 10_000) this.dues.push(due)
    if (due < this.due) this.arm()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private arm(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    const now = Date.now()
    this.dues = this.dues.filter((d) => d > now)
    this.due = Math.min(...this.dues, Number.POSITIVE_INFINITY)
    if (this.stopped || this.due === Number.POSITIVE_INFINITY) return
    this.timer = setTimeout(() => {
      this.fire()
      this.arm()
    }, this.due - now)
    this.timer.unref()
  }
}
