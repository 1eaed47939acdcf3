/**
 * Group commit per key: while one batch of a key is in its transaction, requests for the same
 * key queue and go together in the next one. Decisions on one policy are serial anyway (its row
 * lock), so a burst costs one transaction per batch instead of one per request; different keys
 * run in parallel.
 */
export class KeyedBatcher<Req, Res> {
  private readonly queues = new Map<string, { items: Pending<Req, Res>[]; running: boolean }>()

  constructor(
    private readonly run: (key: string, reqs: Req[]) => Promise<Res[]>,
    private readonly maxBatch = 64,
  ) {}

  submit(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let q = this.queues.get(key)
      if (!q) {
        q = { items: [], running: false }
        this.queues.set(key, q)
      }
      q.items.push({ req, resolve, reject })
      if (!q.running) void this.drain(key, q)
    })
  }

  private async drain(key: string, q: { items: Pending<Req, Res>[]; running: boolean }): Promise<void> {
    q.running = true
    while (q.items.length > 0) {
      const batch = q.items.splice(0, this.maxBatch)
      try {
        const out = await this.run(
          key,
          batch.map((p) => p.req),
        )
        batch.forEach((p, i) => {
          p.resolve(out[i] as Res)
        })
      } catch (err) {
        for (const p of batch) p.reject(err)
      }
    }
    q.running = false
    this.queues.delete(key)
  }
}

interface Pending<Req, Res> {
  req: Req
  resolve: (r: Res) => void
  reject: (err: unknown) => void
}
