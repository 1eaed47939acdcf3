/** At most `limit` tasks at once; the rest wait in arrival order. */
export class Gate {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its slot straight to the next waiter, so none can jump the queue
    // and the count never overshoots.
    if (this.running >= this.limit) await new Promise<void>((r) => this.waiting.push(r))
    else this.running++
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}
