import { periodicLoop } from '../common/background-loop.ts'
import type { FeatureHost } from '../http/host.ts'
import { describeMethod } from '../rpc/methods/registry.ts'
import { setRequestRecorder } from './gateway-hooks.ts'
import { RequestRecorder } from './recorder.ts'
import { registerRequestRoutes } from './routes.ts'
import { pruneRequests } from './store.ts'

/** How often the background-jobs process deletes recorded requests past the retention. */
const PRUNE_EVERY_MS = 60_000
/** Rows per delete statement: short statements, repeated until none is left. */
const PRUNE_BATCH = 10_000

export interface RequestLog {
  /** Undefined when recording is off (HALYARD_REQUEST_LOG=off). */
  readonly recorder: RequestRecorder | undefined
  readonly retentionMs: number
}

/**
 * The request explorer (docs/request-explorer.md): the recorder every JSON-RPC surface reports
 * to, flushed by every process (each records its own requests), pruning past
 * HALYARD_REQUEST_LOG_RETENTION by the background-jobs process, and GET /v1/requests. Must be
 * registered before any JSON-RPC route (they look the recorder up when defined).
 */
export function registerRequests(host: FeatureHost, opts: { flushMs?: number } = {}): RequestLog {
  const { ctx } = host
  const retentionMs = ctx.env.HALYARD_REQUEST_LOG_RETENTION
  registerRequestRoutes(host.app, ctx.storage, ctx.networks, retentionMs)
  if (ctx.env.HALYARD_REQUEST_LOG === 'off') return { recorder: undefined, retentionMs }
  const recorder = new RequestRecorder(ctx.storage.db, ctx.logger, {
    ...(opts.flushMs !== undefined ? { flushMs: opts.flushMs } : {}),
    label: (x, method) => describeMethod(x.network.kind, method).label,
  })
  setRequestRecorder(host.app, { recorder, networks: ctx.networks })
  recorder.start()
  host.addTask({ name: 'request log flush', stop: () => recorder.stop() })
  const prune = periodicLoop({
    failure: 'request log pruning failed',
    logger: ctx.logger,
    intervalMs: PRUNE_EVERY_MS,
    unref: true,
    work: async () => {
      const before = new Date(Date.now() - retentionMs)
      while ((await pruneRequests(ctx.storage.db, before, PRUNE_BATCH)) === PRUNE_BATCH) {}
    },
  })
  host.onStart(() => prune.start())
  host.addTask({ name: 'request log pruning', stop: () => prune.stop() })
  return { recorder, retentionMs }
}
