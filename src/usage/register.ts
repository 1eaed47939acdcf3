import type { FeatureHost } from '../http/host.ts'
import { UsageRecorder } from './recorder.ts'
import { registerUsageRoutes } from './routes.ts'

/**
 * Usage per account, day and method: the recorder the charger counts into, flushed by every
 * process (not only the background-jobs worker: each one counts its own requests), and
 * GET /v1/usage. Registered first, so its task stops last: what other tasks charge while
 * stopping (WebSocket push debts) is still flushed.
 */
export function registerUsage(host: FeatureHost, flushIntervalMs?: number): UsageRecorder {
  const { ctx } = host
  const recorder = new UsageRecorder(ctx.storage.db, ctx.logger)
  ctx.charger.recordUsageInto(recorder)
  recorder.start(flushIntervalMs)
  host.addTask({ name: 'usage flush', stop: () => recorder.stop() })
  registerUsageRoutes(host.app, ctx.storage)
  return recorder
}
