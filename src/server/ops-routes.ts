import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { chainId, malformedAnswer, nodeError } from '../chains/reads.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import { withTimeout } from '../common/time.ts'
import { definePublicRoute } from '../http/route.ts'
import type { Metrics } from '../metrics.ts'
import type { DB } from '../storage/database.ts'
import { probeWrite } from '../storage/write-probe.ts'
import { clusterWorker } from './cluster.ts'
import { workerMetrics } from './cluster-metrics.ts'

export interface ReadinessCheck {
  name: string
  /** Throws naming the problem. */
  check(): Promise<void>
  /**
   * A line about a capability (e.g. internal transfers), reported in `checks` instead of "ok";
   * it never makes `/ready` fail.
   */
  info?(): Promise<string>
}

interface Deps {
  db: DB
  networks: NetworkRegistry
  metrics: Metrics
  /** Extra dependencies to check, e.g. Redis. */
  checks?: ReadinessCheck[]
}

const health = z.object({ status: z.literal('ok').describe('Always ok: the process answers') })
const readiness = z.object({
  status: z.enum(['ready', 'not_ready']).describe('ready when every check passes (then 200; else 503)'),
  checks: z
    .record(z.string(), z.string())
    .describe('One line per check: "ok", "failing: <why>", or what an informational check reports'),
})

/** GET /health, /ready, /metrics: no key, no secrets. */
export function registerOpsRoutes(app: FastifyInstance, deps: Deps) {
  definePublicRoute(app, {
    method: 'GET',
    url: '/health',
    responses: { 200: health },
    summary: 'Liveness probe',
    description:
      'Answers `{"status":"ok"}` while the process serves HTTP. It checks no dependency: use `/ready` for that. No key.',
    handler: () => ({ status: 'ok' }),
  })

  definePublicRoute(app, {
    method: 'GET',
    url: '/ready',
    responses: { 200: readiness },
    summary: 'Readiness probe',
    description:
      "Checks the database (a write), each network's upstream (eth_chainId or getHealth, 2 s each) and the features' own checks (bundler executor balance, paymaster deposit). Answers 200 `ready` or 503 `not_ready`, with one line per check. No key.",
    handler: async ({ reply }) => {
      const results: Record<string, string> = {}
      let ready = true
      // An informing check reports its line, and its failure never fails `/ready`.
      const run = async (name: string, fn: () => Promise<unknown>, informs = false) => {
        try {
          const line = await withTimeout(fn(), 2_000)
          results[name] = informs ? String(line) : 'ok'
        } catch (err) {
          results[name] = `failing: ${(err as Error).message}`
          if (!informs) ready = false
        }
      }
      await Promise.all([
        run('database', () => probeWrite(deps.db)),
        ...(deps.checks ?? []).map((c) =>
          run(c.name, () => (c.info ? c.info() : c.check()), c.info !== undefined),
        ),
        ...deps.networks.all().map((n) =>
          run(`network ${n.chain}/${n.network}`, async () => {
            if (n.kind === 'evm') {
              try {
                await chainId(n, { timeoutMs: 2_000 })
              } catch (err) {
                // The check names the node's own error as it always did, not the read's wording;
                // it asks whether the node answers, so any answer in another shape still counts.
                const refused = nodeError(err)
                if (refused) throw new Error(refused.message)
                if (!malformedAnswer(err)) throw err
              }
              return
            }
            // Solana's health method is no EVM chain read (chains/reads.ts covers EVM methods).
            const out = await n.pool.call('getHealth', [], { timeoutMs: 2_000 })
            if (out.error) throw new Error(out.error.message)
          }),
        ),
      ])
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks: results })
    },
  })

  // In a cluster worker a scrape must see every worker's counters, not this one's share
  // (cluster-metrics.ts); a single process answers from its own registry, without IPC.
  const clusterMetrics = clusterWorker() ? workerMetrics(deps.metrics.registry) : undefined
  if (clusterMetrics) app.addHook('onClose', async () => clusterMetrics.close())
  definePublicRoute(app, {
    method: 'GET',
    url: '/metrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text format: requests, upstream health and latency, cache, webhooks, bundler and index series (docs/observability is where they are described when that page exists). No key; keep it on a private network.',
    handler: ({ reply }) => {
      reply.header('content-type', deps.metrics.registry.contentType)
      return clusterMetrics ? clusterMetrics.scrape() : deps.metrics.registry.metrics()
    },
  })
}
