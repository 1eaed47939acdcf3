/**
 * A steady load of HTTP requests with a counting harness: every request's send time, latency,
 * status (or transport failure) and Retry-After are kept, so a test can say afterwards what
 * clients saw during a fault.
 */

export interface LoadRequest {
  /** What kind of request this is (a known key, an unknown one…), for grouping outcomes. */
  kind: string
  url: string
  init: RequestInit
}

export interface Outcome {
  kind: string
  at: number
  ms: number
  /** HTTP status, or 'no-answer' (client deadline), or 'refused' (transport error: no process?). */
  status: number | 'no-answer' | 'refused'
  retryAfter: string | null
  code?: string
}

export interface Load {
  readonly outcomes: Outcome[]
  stop(): Promise<void>
}

/**
 * `concurrency` loops, each sending `next(i)` one after another with `pauseMs` between, until
 * stopped. A request unanswered after `clientTimeoutMs` counts as 'no-answer'.
 */
export function startLoad(opts: {
  next: (i: number) => LoadRequest
  concurrency?: number
  pauseMs?: number
  clientTimeoutMs?: number
}): Load {
  const outcomes: Outcome[] = []
  let stopping = false
  let n = 0
  const loop = async () => {
    while (!stopping) {
      const req = opts.next(n++)
      const at = Date.now()
      let status: Outcome['status']
      let retryAfter: string | null = null
      let code: string | undefined
      try {
        const res = await fetch(req.url, {
          ...req.init,
          signal: AbortSignal.timeout(opts.clientTimeoutMs ?? 15_000),
        })
        status = res.status
        retryAfter = res.headers.get('retry-after')
        const body = (await res.json().catch(() => undefined)) as { error?: { code?: string } } | undefined
        code = body?.error?.code
      } catch (err) {
        status = (err as Error).name === 'TimeoutError' ? 'no-answer' : 'refused'
      }
      outcomes.push({
        kind: req.kind,
        at,
        ms: Date.now() - at,
        status,
        retryAfter,
        ...(code ? { code } : {}),
      })
      if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs))
    }
  }
  const loops = Array.from({ length: opts.concurrency ?? 4 }, loop)
  return {
    outcomes,
    async stop() {
      stopping = true
      await Promise.all(loops)
    },
  }
}

/** "200×812 503×4" for the outcomes. */
export function statusCounts(outcomes: readonly Outcome[]): string {
  const counts = new Map<string, number>()
  for (const o of outcomes) counts.set(String(o.status), (counts.get(String(o.status)) ?? 0) + 1)
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([s, c]) => `${s}×${c}`)
    .join(' ')
}
