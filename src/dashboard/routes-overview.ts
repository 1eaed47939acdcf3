import type { FeatureHost } from '../http/host.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { effectiveLimits } from '../limits/plans.ts'
import { usagePerMethodOver } from '../usage/methods-range.ts'
import { readUsage, resolveRange } from '../usage/service.ts'
import type { WalletService } from '../wallets/service.ts'
import { barChart, labelledBars } from './charts.ts'
import { type Html, html } from './html.ts'
import { layout, when } from './layout.ts'
import { renderOpenApi } from './openapi-page.ts'
import type { DashboardRoutes } from './route.ts'

const fmt = (n: number | null) => (n === null ? 'unlimited' : n.toLocaleString('en-US'))

/**
 * The overview's time ranges. Usage is counted per UTC day, so "24 h" shows yesterday and
 * today (the last 24 hours lie within them).
 */
const RANGES = {
  '24h': { days: 2, label: 'Last 24 h' },
  '7d': { days: 7, label: 'Last 7 days' },
  '30d': { days: 30, label: 'Last 30 days' },
} as const
type RangeName = keyof typeof RANGES
const DAY_MS = 86_400_000

/** Overview (plan, limits, networks), Smart wallets and the API docs page. */
export function registerOverviewPages(
  r: DashboardRoutes,
  host: FeatureHost,
  wallets: WalletService,
  history: IndexHistory,
): void {
  const { ctx } = host

  r.signedIn('GET', '/dashboard', async ({ request, session }) => {
    const asked = (request.query as Record<string, unknown>).range
    const rangeName: RangeName =
      typeof asked === 'string' && Object.hasOwn(RANGES, asked) ? (asked as RangeName) : '30d'
    const now = Date.now()
    const fromDay = new Date(now - (RANGES[rangeName].days - 1) * DAY_MS).toISOString().slice(0, 10)
    const account = await ctx.auth.accountById(session.account_id)
    const limits = effectiveLimits(session.plan, {
      rps: account?.limit_rps ?? null,
      rpd: account?.limit_rpd === null || account?.limit_rpd === undefined ? null : Number(account.limit_rpd),
      cups: account?.limit_cups ?? null,
    })
    const networks = await Promise.all(
      ctx.networks.all().map(async (n) => {
        const statuses = n.pool.statuses?.() ?? []
        // The index: from which block it is complete and how far it has come (EVM networks).
        const index = n.kind === 'evm' ? await history.ofNetwork(n) : null
        return {
          slug: n.slug,
          kind: n.kind,
          head: n.pool.bestHead?.() ?? null,
          healthy: statuses.filter((s) => s.healthy).length,
          total: statuses.length,
          completeFrom: index?.completeFrom ?? null,
          indexedTo: index?.indexedTo ?? null,
        }
      }),
    )
    const range = resolveRange({ from: fromDay }, now)
    const [usage, top] = await Promise.all([
      readUsage(ctx.storage, session.account_id, range),
      usagePerMethodOver(ctx.storage.db, session.account_id, range.from, range.to, 12),
    ])
    const perDay = (pick: (d: (typeof usage.days)[number]) => number) =>
      usage.days.map((d) => ({ label: d.date.slice(5), value: pick(d) }))
    return layout({
      title: 'Overview',
      session,
      current: '/dashboard',
      body: html`<h2>Plan: ${session.plan}</h2>
<div class="cards">
<div class="card"><div class="n">${fmt(limits.requestsPerSecond)}</div>requests per second</div>
<div class="card"><div class="n">${fmt(limits.requestsPerDay)}</div>requests per day</div>
<div class="card"><div class="n">${fmt(limits.computeUnitsPerSecond)}</div>compute units per second</div>
</div>
<h2>Usage, ${RANGES[rangeName].label.toLowerCase()} (UTC days ${range.from} to ${range.to})</h2>
<nav aria-label="Time range" class="ranges"><ul>${(Object.keys(RANGES) as RangeName[]).map(
        (k) =>
          html`<li><a href="/dashboard?range=${k}"${k === rangeName ? html` aria-current="true"` : ''}>${RANGES[k].label}</a></li>`,
      )}</ul></nav>
<p class="muted">Counted in batches per UTC day: the last few seconds may not show yet. Hover a bar for its number, or read the tables.</p>
${barChart({ id: 'chart-requests', title: 'Requests per day', bars: perDay((d) => d.requests), unit: 'requests' })}
${barChart({ id: 'chart-cu', title: 'Compute units per day', bars: perDay((d) => d.computeUnits), unit: 'compute units' })}
${barChart({ id: 'chart-429', title: 'Rate-limited requests (429) per day', bars: perDay((d) => d.limited), unit: '429s' })}
${labelledBars({ title: `Compute units per method, ${range.from} to ${range.to}`, bars: top.map((m) => ({ label: m.method, value: m.computeUnits })), unit: 'CU', item: 'Method' })}
<h2>Networks</h2>
<table><thead><tr><th scope="col">Network</th><th scope="col">Kind</th><th scope="col">Head block</th><th scope="col">Upstreams healthy</th><th scope="col">Index complete from</th><th scope="col">Indexed to</th></tr></thead><tbody>
${networks.map(
  (n) =>
    html`<tr><td>${n.slug}</td><td>${n.kind}</td><td>${n.head ?? '—'}</td><td><span class="${n.healthy > 0 ? 'status-active' : 'status-paused'}">${n.healthy} of ${n.total}</span></td><td>${n.completeFrom ?? '—'}</td><td>${n.indexedTo ?? '—'}</td></tr>`,
)}</tbody></table>`,
    })
  })

  r.signedIn('GET', '/dashboard/wallets', async ({ session }) => {
    const keys = await ctx.auth.listKeys(session.email)
    const rows: Html[] = []
    for (const k of keys) {
      const list = await wallets.list(k.id, { page: 1, limit: 100 }, undefined)
      for (const w of list.wallets)
        rows.push(
          html`<tr><td><code>${w.address}</code></td><td><code>${w.owner}</code></td><td>${w.chain}</td><td><span class="status-${w.status}">${w.status}</span></td><td>${k.name ?? k.prefix}</td><td>${when(w.created_at)}</td></tr>`,
        )
    }
    return layout({
      title: 'Smart wallets',
      session,
      current: '/dashboard/wallets',
      body:
        rows.length === 0
          ? html`<p>No smart wallets yet. Create one with <code>POST /v1/wallets</code> and a key holding <code>wallets:manage</code>.</p>`
          : html`<table><thead><tr><th scope="col">Address</th><th scope="col">Owner</th><th scope="col">Chain</th><th scope="col">Status</th><th scope="col">Key</th><th scope="col">Created</th></tr></thead><tbody>${rows}</tbody></table>`,
    })
  })

  r.signedIn('GET', '/dashboard/docs', async ({ session }) => {
    // The document is whatever GET /v1/openapi.json serves (generated from the route schemas).
    const res = await host.app.inject({ method: 'GET', url: '/v1/openapi.json' })
    let doc: unknown
    if (res.statusCode === 200) {
      try {
        doc = JSON.parse(res.body)
      } catch {
        doc = undefined
      }
    }
    return layout({
      title: 'API docs',
      session,
      current: '/dashboard/docs',
      body: doc
        ? renderOpenApi(doc)
        : html`<p>The OpenAPI document (<code>/v1/openapi.json</code>) is not available on this server.</p>`,
    })
  })
}
