import { Counter, Gauge } from 'prom-client'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { Storage } from '../storage/database.ts'

/**
 * The database's state changes, logged once each (down with the first error, up with how long
 * it was down), and the requests and jobs it failed meanwhile counted in /metrics rather than
 * logged one line each (docs/dependency-failures.md). PGlite runs in-process: nothing to watch.
 */
export function watchDatabase(storage: Storage, logger: Logger, metrics: Metrics): () => void {
  const health = storage.health
  if (!health) return () => {}
  let downAt = 0
  let counted = 0
  new Gauge({
    name: 'halyard_database_up',
    help: '1 while the database answers, 0 from the first failed wait until one succeeds',
    registers: [metrics.registry],
    collect() {
      this.set(health.state === 'up' ? 1 : 0)
    },
  })
  new Counter({
    name: 'halyard_database_unavailable_total',
    help: 'Database waits (connections, queries) that failed for want of a server or ran past HALYARD_DB_TIMEOUT_MS',
    registers: [metrics.registry],
    collect() {
      this.inc(health.failures - counted)
      counted = health.failures
    },
  })
  return health.onChange((state, err) => {
    if (state === 'down') {
      downAt = Date.now()
      logger.error(
        { err: err?.message },
        'database unavailable; requests that need it get 503 until it is back',
      )
    } else {
      logger.warn({ downMs: Date.now() - downAt, failed: health.failures }, 'database available again')
    }
  })
}
