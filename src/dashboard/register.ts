import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { HalyardError } from '../errors.ts'
import type { Sponsorship } from '../gas/register-sponsorship.ts'
import type { FeatureHost } from '../http/host.ts'
import { definePublicRoute } from '../http/route.ts'
import type { IndexerService } from '../indexer/service.ts'
import type { RequestLog } from '../requests/register.ts'
import type { WalletService } from '../wallets/service.ts'
import type { WebhookService } from '../webhooks/service.ts'
import { DashboardRoutes } from './route.ts'
import { registerAuthPages } from './routes-auth.ts'
import { registerGasPages } from './routes-gas.ts'
import { registerKeyAccessPages } from './routes-key-access.ts'
import { registerKeyUsagePages } from './routes-key-usage.ts'
import { registerKeyPages } from './routes-keys.ts'
import { registerOverviewPages } from './routes-overview.ts'
import { registerRequestPages } from './routes-requests.ts'
import { registerWebhookPages } from './routes-webhooks.ts'
import { DashboardSessions } from './sessions.ts'
import { checkHost, type DashboardSite, SECURITY_HEADERS } from './web.ts'

/** Form bodies are small: a name, a URL, a JSON config. Every dashboard route's body limit. */
export const FORM_LIMIT = 64 * 1024

const ASSETS = {
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
} as const

/**
 * The web dashboard under /dashboard (docs/dashboard.md): server-rendered pages over the same services
 * as /v1. Its routes live in their own Fastify scope, the only one that parses HTML form bodies
 * and sends the dashboard's security headers.
 */
export function registerDashboard(
  host: FeatureHost,
  deps: {
    webhooks: WebhookService
    sponsorship: Sponsorship
    wallets: WalletService
    indexer: IndexerService
    requests: RequestLog
  },
): DashboardSessions {
  const { ctx } = host
  const sessions = new DashboardSessions(ctx.storage.db, ctx.auth, ctx.limiter)
  // The keys page's "last used": the auth service marks keys in memory per request, this
  // writes them in one UPDATE every few seconds, and once more when the server closes.
  ctx.auth.startLastUsedFlush(undefined, (err) =>
    ctx.logger.warn({ err: (err as Error).message }, 'api key last-used flush failed'),
  )
  host.addTask({ name: 'api key last-used flush', stop: () => ctx.auth.stopLastUsedFlush() })
  const assets = Object.fromEntries(
    Object.keys(ASSETS).map((name) => [
      name,
      readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8'),
    ]),
  ) as Record<keyof typeof ASSETS, string>

  const site: DashboardSite = { origin: () => ctx.publicOrigin(), forwarded: ctx.forwarded }

  host.app.register(async (app: FastifyInstance) => {
    const routes = new DashboardRoutes(app, sessions, site)
    // Every dashboard route's body limit is the form limit, so a refusal names it (not the API's).
    app.addHook('onRoute', (route) => {
      route.bodyLimit = FORM_LIMIT
    })
    // Before anything else, on every dashboard request: the Host must be the public host.
    app.addHook('onRequest', async (request, reply) => {
      try {
        checkHost(site, request)
      } catch (err) {
        if (!(err instanceof HalyardError)) throw err
        return routes.refuse(request, reply, err)
      }
    })
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT },
      (_request, body, done) => {
        const form: Record<string, string | string[]> = {}
        for (const [k, v] of new URLSearchParams(body as string)) {
          const had = form[k]
          form[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v]
        }
        done(null, form)
      },
    )
    app.addHook('onSend', async (_request, reply, payload) => {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!reply.hasHeader(k)) reply.header(k, v)
      return payload
    })
    for (const [name, type] of Object.entries(ASSETS)) {
      definePublicRoute(app, {
        method: 'GET',
        url: `/dashboard/assets/${name}`,
        handler: ({ reply }) =>
          reply
            .type(type)
            .header('cache-control', 'public, max-age=300')
            .send(assets[name as keyof typeof ASSETS]),
      })
    }
    registerAuthPages(routes)
    registerKeyPages(routes, ctx.auth)
    registerKeyAccessPages(routes, ctx.auth)
    registerWebhookPages(routes, deps.webhooks, ctx.networks)
    registerKeyUsagePages(routes, ctx.auth, ctx.storage)
    registerRequestPages(routes, {
      storage: ctx.storage,
      networks: ctx.networks,
      recording: deps.requests.recorder !== undefined,
      retentionMs: deps.requests.retentionMs,
      keysOf: async (session) =>
        (await ctx.auth.listKeys(session.email)).map((k) => ({ id: k.id, name: k.name, prefix: k.prefix })),
    })
    registerGasPages(routes, deps.sponsorship.policies, ctx.networks)
    registerOverviewPages(routes, host, deps.wallets, deps.indexer.history)
  })
  return sessions
}
