import { call, postRpc } from '../helpers/halyard.ts'

/** One request of a steady load: when it went out, how long it took, what came back. */
export interface Sample {
  sentAt: number
  ms: number
  status: number
  retryAfter: string | null
  code: string | undefined
}

export interface KeyedLoad {
  readonly samples: Sample[]
  /** Stops sending and resolves once every request in flight has its answer. */
  stop(): Promise<Sample[]>
}

/**
 * A steady keyed load: `workers` loops, each sending one JSON-RPC request every `everyMs`
 * (a request that takes longer delays only its own loop). Network errors count as status 0.
 */
export function steadyLoad(url: string, key: string, workers: number, everyMs: number): KeyedLoad {
  const samples: Sample[] = []
  let running = true
  const loop = async (w: number) => {
    await new Promise((r) => setTimeout(r, (everyMs / workers) * w))
    while (running) {
      const sentAt = Date.now()
      let sample: Sample
      try {
        const res = await postRpc(url, key, call('eth_chainId'))
        const err = (res.json as { error?: { code?: unknown } }).error
        sample = {
          sentAt,
          ms: Date.now() - sentAt,
          status: res.status,
          retryAfter: res.headers.get('retry-after'),
          code: typeof err?.code === 'string' ? err.code : undefined,
        }
      } catch {
        sample = { sentAt, ms: Date.now() - sentAt, status: 0, retryAfter: null, code: undefined }
      }
      samples.push(sample)
      const wait = everyMs - (Date.now() - sentAt)
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    }
  }
  const loops = Array.from({ length: workers }, (_, w) => loop(w))
  return {
    samples,
    async stop() {
      running = false
      await Promise.all(loops)
      return samples
    },
  }
}

/** Counts of statuses, e.g. "200×812 503×31". */
export function statusSummary(samples: readonly Sample[]): string {
  const by = new Map<number, number>()
  for (const s of samples) by.set(s.status, (by.get(s.status) ?? 0) + 1)
  return [...by.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([status, n]) => `${status}×${n}`)
    .join(' ')
}

/** A fault table's row: what a client saw, what was lost or counted twice, how long recovery took. */
export interface FaultRow {
  fault: string
  clientVisible: string
  lost: string
  duplicated: string
  recovery: string
}

export function printFaultTable(title: string, rows: readonly FaultRow[]): void {
  if (rows.length === 0) return
  const head: FaultRow = {
    fault: 'fault',
    clientVisible: 'client-visible effect',
    lost: 'lost',
    duplicated: 'duplicated / over-counted',
    recovery: 'recovery',
  }
  const cols = Object.keys(head) as (keyof FaultRow)[]
  const width = (c: keyof FaultRow) => Math.max(...[head, ...rows].map((r) => r[c].length))
  const line = (r: FaultRow) => `| ${cols.map((c) => r[c].padEnd(width(c))).join(' | ')} |`
  const out = [
    `\n${title}`,
    line(head),
    `|${cols.map((c) => '-'.repeat(width(c) + 2)).join('|')}|`,
    ...rows.map(line),
  ]
  console.log(out.join('\n'))
}
