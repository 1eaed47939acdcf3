import type { Worker } from 'node:cluster'
import { AggregatorRegistry, Gauge, type Registry } from 'prom-client'
import { z } from 'zod'

/**
 * GET /metrics for a whole cluster (HALYARD_WORKERS > 1). Each worker has its own registry and
 * node:cluster hands a scrape to any one of them, so the worker that gets it asks the primary,
 * the primary collects every serving worker's `getMetricsAsJSON()` and aggregates them with
 * prom-client (counters and histograms summed, gauges by their `aggregator`), and the asking
 * worker answers with that text. prom-client's own `AggregatorRegistry.clusterMetrics` is not
 * used: it fails the whole scrape when one worker is slow, and it listens on the global cluster
 * object; here a round is bounded and answers with the workers that did reply.
 *
 * Messages (all tagged `halyardMetrics`):
 *   worker → primary  ask        {id}           a scrape arrived; ids are per asking worker
 *   primary → worker  collect    {round}        send your registry
 *   worker → primary  collected  {round, metrics | error}
 *   primary → worker  answer     {id, text}     the aggregated exposition text
 */

/** How long the primary waits for the workers; below ASK_TIMEOUT_MS so a partial answer arrives. */
export const COLLECT_TIMEOUT_MS = 1_500
/** How long a worker waits for the primary before it answers with its own metrics only. */
export const ASK_TIMEOUT_MS = 3_000

const MISSING_METRIC = 'halyard_cluster_metrics_workers_missing'

// The shape `Registry.getMetricsAsJSON()` produces. Checked at the IPC boundary because
// `AggregatorRegistry.aggregate` throws on an unknown aggregator and would fail the scrape.
// Loose objects: histogram values carry more fields (metricName, exemplar) that must pass through.
const metricJson = z.looseObject({
  name: z.string(),
  help: z.string(),
  type: z.string(),
  aggregator: z.enum(['omit', 'sum', 'first', 'min', 'max', 'average']),
  // A NaN gauge arrives as null through JSON.
  values: z.array(z.looseObject({ value: z.number().nullable(), labels: z.record(z.string(), z.unknown()) })),
})
type MetricJson = z.infer<typeof metricJson>

const message = z.discriminatedUnion('halyardMetrics', [
  z.object({ halyardMetrics: z.literal('ask'), id: z.number().int() }),
  z.object({ halyardMetrics: z.literal('collect'), round: z.number().int() }),
  z.object({
    halyardMetrics: z.literal('collected'),
    round: z.number().int(),
    metrics: z.array(metricJson).optional(),
    error: z.string().optional(),
  }),
  z.object({ halyardMetrics: z.literal('answer'), id: z.number().int(), text: z.string() }),
])
type Message = z.infer<typeof message>

/** Parses an IPC message of this protocol; undefined for other traffic (ready reports, ...). */
function parse(m: unknown): Message | undefined {
  if (typeof m !== 'object' || m === null || !('halyardMetrics' in m)) return undefined
  const out = message.safeParse(m)
  return out.success ? out.data : undefined
}

/**
 * A send whose failure is ignored: a worker that died a moment ago still looks connected, and
 * an unhandled EPIPE on its channel would crash the primary (the round just misses its answer).
 */
function send(target: Worker, m: Message): void {
  target.send(m, undefined, {}, () => {})
}

// ---------------------------------------------------------------------------------------------
// Worker side

export interface WorkerMetrics {
  /** The cluster's metrics as Prometheus text (this worker's alone if the primary is silent). */
  scrape(): Promise<string>
  /** Stops answering the primary; the IPC listener would otherwise keep the worker alive. */
  close(): void
}

/**
 * In a cluster worker: answers the primary's `collect` with `registry`, and turns a scrape into
 * an `ask`. Outside a cluster there is no IPC channel and /metrics stays the local registry.
 */
export function workerMetrics(registry: Registry): WorkerMetrics {
  let nextId = 0
  const waiting = new Map<number, (text: string) => void>()

  const onMessage = (raw: unknown) => {
    const m = parse(raw)
    if (m?.halyardMetrics === 'collect') {
      registry.getMetricsAsJSON().then(
        // prom-client's typings declare `type` as an enum; at run time it is 'counter' etc.
        (metrics) =>
          sendToPrimary({
            halyardMetrics: 'collected',
            round: m.round,
            metrics: metrics as unknown as MetricJson[],
          }),
        (err: Error) => sendToPrimary({ halyardMetrics: 'collected', round: m.round, error: err.message }),
      )
    } else if (m?.halyardMetrics === 'answer') {
      waiting.get(m.id)?.(m.text)
    }
  }
  process.on('message', onMessage)

  return {
    scrape() {
      const id = nextId++
      return new Promise<string>((resolve) => {
        const local = async (why: string) => {
          finish()
          // Still a valid exposition: a comment line says the numbers are one worker's share.
          resolve(`# halyard: ${why}; these are this worker's metrics only\n${await registry.metrics()}`)
        }
        const timer = setTimeout(
          () => void local(`the cluster primary did not answer within ${ASK_TIMEOUT_MS} ms`),
          ASK_TIMEOUT_MS,
        )
        const finish = () => {
          clearTimeout(timer)
          waiting.delete(id)
        }
        waiting.set(id, (text) => {
          // An empty answer: no worker replied in time; this worker's own numbers beat none.
          if (text === '') return void local('no cluster worker answered in time')
          finish()
          resolve(text)
        })
        if (!process.send || !process.connected) return void local('no IPC channel to the cluster primary')
        process.send({ halyardMetrics: 'ask', id } satisfies Message, undefined, {}, (err) => {
          if (err) void local(`asking the cluster primary failed (${err.message})`)
        })
      })
    },
    close() {
      process.off('message', onMessage)
    },
  }
}

function sendToPrimary(m: Message): void {
  // The primary may be gone during shutdown; a lost reply only makes that round partial.
  if (process.connected) process.send?.(m, undefined, {}, () => {})
}

// ---------------------------------------------------------------------------------------------
// Primary side

interface Round {
  /** Scrapes waiting for this round: the one that started it and any that came meanwhile. */
  readonly askers: Array<{ worker: Worker; askId: number }>
  readonly pending: Set<Worker>
  readonly responses: MetricJson[][]
  readonly timer: NodeJS.Timeout
}

export interface MetricsCollector {
  /** Handles a worker's IPC message; true when it was part of this protocol. */
  handle(from: Worker, raw: unknown): boolean
  /** A worker exited: rounds stop waiting for it. */
  workerGone(w: Worker): void
}

/**
 * In the primary. `serving` lists the workers that report ready (a replacement still starting
 * is not asked, so a restart costs no wait, only a missing count); `expected` is the configured
 * worker count, so `halyard_cluster_metrics_workers_missing` counts those too.
 */
export function metricsCollector(opts: {
  serving: () => Iterable<Worker>
  expected: number
}): MetricsCollector {
  let nextRound = 0
  // At most one round in flight (/metrics needs no key): scrapes that arrive meanwhile share it.
  let current: { id: number; round: Round } | undefined

  const finish = (roundId: number) => {
    if (current?.id !== roundId) return
    const { round } = current
    current = undefined
    clearTimeout(round.timer)
    const answer = (text: string) => {
      for (const a of round.askers) {
        if (a.worker.isConnected()) send(a.worker, { halyardMetrics: 'answer', id: a.askId, text })
      }
    }
    if (round.responses.length === 0) return answer('')
    aggregate(round.responses, opts.expected).then(answer, () => answer(''))
  }

  const start = (asker: Worker, askId: number) => {
    if (current) {
      current.round.askers.push({ worker: asker, askId })
      return
    }
    const roundId = nextRound++
    const targets = new Set([...opts.serving()].filter((w) => w.isConnected()))
    // The asker serves HTTP, so it is alive even if its ready report is still on the way.
    targets.add(asker)
    const timer = setTimeout(() => finish(roundId), COLLECT_TIMEOUT_MS)
    current = {
      id: roundId,
      round: { askers: [{ worker: asker, askId }], pending: new Set(targets), responses: [], timer },
    }
    for (const w of targets) send(w, { halyardMetrics: 'collect', round: roundId })
  }

  const answered = (from: Worker, roundId: number, metrics: MetricJson[] | undefined) => {
    const round = current?.id === roundId ? current.round : undefined
    if (!round?.pending.delete(from)) return
    if (metrics) round.responses.push(metrics)
    if (round.pending.size === 0) finish(roundId)
  }

  return {
    handle(from, raw) {
      const m = parse(raw)
      if (!m) return false
      if (m.halyardMetrics === 'ask') start(from, m.id)
      else if (m.halyardMetrics === 'collected') answered(from, m.round, m.metrics)
      return true
    },
    workerGone(w) {
      if (current?.round.pending.delete(w) && current.round.pending.size === 0) finish(current.id)
    },
  }
}

async function aggregate(responses: MetricJson[][], expected: number): Promise<string> {
  const registry = AggregatorRegistry.aggregate(responses)
  const missing = Math.max(0, expected - responses.length)
  // Always exported (0 when complete), so an alert can tell a partial scrape from a full one.
  new Gauge({
    name: MISSING_METRIC,
    help: 'Cluster workers whose metrics are missing from this scrape (no answer in time, or restarting)',
    registers: [registry],
  }).set(missing)
  const text = await registry.metrics()
  if (missing === 0) return text
  const why = `not serving, or no answer within ${COLLECT_TIMEOUT_MS} ms`
  return `# halyard: metrics of ${missing} of ${expected} workers are missing (${why})\n${text}`
}
