import type { NetworkRegistry } from '../chains/registry.ts'
import { notFound } from '../errors.ts'
import {
  DEFAULT_LIMIT,
  filterOf,
  listRequests,
  MAX_LIMIT,
  type RequestView,
  requestQuery,
} from '../requests/service.ts'
import type { Storage } from '../storage/database.ts'
import { type Html, html } from './html.ts'
import { layout, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { parseForm } from './web.ts'

export const REQUESTS = '/dashboard/requests'

/** The request explorer's options: the account's keys for the filter. */
export interface ExplorerDeps {
  readonly storage: Storage
  readonly networks: NetworkRegistry
  /** Whether this server records at all (HALYARD_REQUEST_LOG), and for how long. */
  readonly recording: boolean
  readonly retentionMs: number
  readonly keysOf: (
    session: SessionWithAccount,
  ) => Promise<{ id: string; name: string | null; prefix: string }[]>
}

/** The query string as the filter form sends it (every field, empty ones too). */
const asQuery = (q: unknown) => parseForm(requestQuery, q ?? {})

/**
 * Requests: the signed-in account's recorded gateway calls (src/requests), newest first,
 * filterable by key, method, status, network, time and request id; each links to its detail
 * (params and answer, redacted and capped). Only the session's account is ever read.
 */
export function registerRequestPages(r: DashboardRoutes, deps: ExplorerDeps): void {
  r.signedIn('GET', REQUESTS, async ({ request, session }) => {
    const q = asQuery(request.query)
    const rows = await listRequests(
      deps.storage.db,
      session.account_id,
      filterOf(q),
      q.limit ?? DEFAULT_LIMIT,
    )
    const keys = await deps.keysOf(session)
    return layout({
      title: 'Requests',
      session,
      current: REQUESTS,
      body: html`${intro(deps)}${filterForm(q, keys, deps.networks)}${table(rows, q.limit ?? DEFAULT_LIMIT)}`,
    })
  })

  r.signedIn('GET', `${REQUESTS}/detail`, async ({ request, session }) => {
    const q = request.query as Record<string, unknown>
    const id = typeof q.request_id === 'string' ? q.request_id.slice(0, 64) : ''
    const item = typeof q.item === 'string' && /^\d{1,4}$/.test(q.item) ? Number(q.item) : 0
    const rows =
      id === '' ? [] : await listRequests(deps.storage.db, session.account_id, { requestId: id }, MAX_LIMIT)
    const row = rows.find((x) => (x.batch_item ?? 0) === item)
    if (!row) throw notFound(`request: no recorded request ${id} (item ${item}) in this account`)
    return layout({ title: 'Request', session, current: REQUESTS, body: detail(row) })
  })
}

function intro(deps: ExplorerDeps): Html {
  const hours = deps.retentionMs / 3_600_000
  return deps.recording
    ? html`<p class="muted">Every JSON-RPC call made with this account's keys, kept ${hours} hours; a batch shows each call. Secrets (signatures, signed transactions, passwords, keys) are never kept. Under heavy load a share of calls is counted but not kept in detail. Recorded in batches: the last few seconds may not show yet.</p>`
    : html`<p class="notice error" role="alert">This server does not record requests (HALYARD_REQUEST_LOG=off).</p>`
}

function filterForm(
  q: ReturnType<typeof asQuery>,
  keys: { id: string; name: string | null; prefix: string }[],
  networks: NetworkRegistry,
): Html {
  const opt = (value: string, label: string, selected: string | undefined) =>
    html`<option value="${value}"${selected === value ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${REQUESTS}" class="filters" aria-label="Filter requests">
<div><label for="f-key">Key</label><select id="f-key" name="key">${opt('', 'any key', q.key)}${keys.map((k) => opt(k.id, `${k.name ?? '(unnamed)'} · ${k.prefix}`, q.key))}</select></div>
<div><label for="f-method">Method</label><input id="f-method" name="method" type="text" maxlength="128" value="${q.method ?? ''}"></div>
<div><label for="f-status">Status</label><input id="f-status" name="status" type="text" maxlength="12" value="${q.status ?? ''}" aria-describedby="f-status-hint">
<span class="muted hint" id="f-status-hint">ok, error, 429, -32601…</span></div>
<div><label for="f-network">Network</label><select id="f-network" name="network">${opt('', 'any network', q.network)}${networks.all().map((n) => opt(n.slug, n.slug, q.network))}</select></div>
<div><label for="f-from">From (UTC)</label><input id="f-from" name="from" type="text" maxlength="40" placeholder="2026-01-31T12:00:00Z" value="${q.from ?? ''}"></div>
<div><label for="f-to">To (UTC)</label><input id="f-to" name="to" type="text" maxlength="40" placeholder="2026-01-31T13:00:00Z" value="${q.to ?? ''}"></div>
<div><label for="f-request">Request id</label><input id="f-request" name="request_id" type="text" maxlength="64" value="${q.request_id ?? ''}"></div>
<div class="actions"><button type="submit">Filter</button> <a href="${REQUESTS}">Clear</a></div>
</form>`
}

/** HTTP status, and the JSON-RPC error code when the call failed inside a 200. */
export function statusOf(v: RequestView): string {
  return v.rpc_code === null ? String(v.http_status) : `${v.http_status} · ${v.rpc_code}`
}

const failed = (v: RequestView) => v.http_status >= 400 || v.rpc_code !== null

function detailHref(v: RequestView): string {
  return `${REQUESTS}/detail?request_id=${encodeURIComponent(v.request_id)}&item=${v.batch_item ?? 0}`
}

function table(rows: RequestView[], limit: number): Html {
  if (rows.length === 0) return html`<p>No recorded requests match.</p>`
  return html`<table class="requests"><caption class="muted">${rows.length === limit ? `The newest ${limit}; narrow the filter for older ones.` : `${rows.length} ${rows.length === 1 ? 'call' : 'calls'}.`}</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Key</th><th scope="col">Surface</th><th scope="col">Network</th><th scope="col">Method</th><th scope="col">Status</th><th scope="col">Latency</th><th scope="col">CU</th><th scope="col">Request id</th></tr></thead><tbody>
${rows.map(
  (
    v,
  ) => html`<tr><td>${when(v.at)}</td><td>${v.key.name ?? v.key.prefix ?? v.key.id}</td><td>${v.surface}</td><td>${v.network}</td>
<td><code>${v.method || '(none)'}</code>${v.batch_size ? html` <span class="muted">(${(v.batch_item ?? 0) + 1} of ${v.batch_size})</span>` : ''}</td>
<td><span class="${failed(v) ? 'status-failed' : 'status-active'}">${statusOf(v)}</span></td><td>${v.latency_ms.toFixed(1)} ms</td><td>${v.compute_units}</td>
<td><a href="${detailHref(v)}"><code>${v.request_id}</code><span class="skip"> ${v.method} details</span></a></td></tr>`,
)}</tbody></table>`
}

function detail(v: RequestView): Html {
  return html`<dl class="facts">
<dt>Request id</dt><dd><code id="request-id">${v.request_id}</code>${v.batch_size ? ` (call ${(v.batch_item ?? 0) + 1} of a batch of ${v.batch_size})` : ''}</dd>
<dt>Time</dt><dd>${when(v.at)}</dd>
<dt>Key</dt><dd>${v.key.name ?? '(unnamed)'} <code>${v.key.prefix ?? v.key.id}</code></dd>
<dt>Surface</dt><dd>${v.surface}</dd>
<dt>Network</dt><dd>${v.network}</dd>
<dt>Method</dt><dd><code>${v.method || '(none)'}</code></dd>
<dt>Status</dt><dd id="request-status">${statusOf(v)}</dd>
<dt>Error</dt><dd id="request-error">${v.error ?? html`<span class="muted">none</span>`}</dd>
<dt>Latency</dt><dd>${v.latency_ms.toFixed(1)} ms</dd>
<dt>Compute units</dt><dd>${v.compute_units}</dd>
<dt>Origin</dt><dd>${v.origin ?? html`<span class="muted">none sent</span>`}</dd>
</dl>
<h2>Params</h2>
<pre class="json" id="request-params" tabindex="0">${v.params ?? '(none)'}</pre>
<h2>Answer</h2>
<pre class="json" id="request-answer" tabindex="0">${v.answer ?? '(none kept: the request was refused before it ran)'}</pre>
<p><a href="${REQUESTS}">Back to requests</a></p>`
}
