import type { FastifyReply } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { DB } from '../storage/database.ts'
import { EVENT_TYPES } from '../webhooks/config.ts'
import { view, type WebhookService } from '../webhooks/service.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, parseForm, parseJsonField, textField } from './web.ts'
import { recentEvents } from './webhook-reads.ts'

const W = '/dashboard/webhooks'
const STATUSES = ['active', 'paused', 'disabled'] as const

const createForm = z.object({
  url: textField(2048).pipe(z.string().min(1, { error: 'is required' })),
  chain: textField(100).pipe(z.string().min(1, { error: 'is required' })),
  event_type: z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }),
  config: textField(65_536),
})
const statusForm = z.object({ status: z.enum(['active', 'paused'], { error: 'must be active or paused' }) })
const redeliverForm = z.object({
  event_id: textField(100).pipe(z.string().min(1, { error: 'is required' })),
})

/** The config textarea holds JSON; a parse error names the field and the position. */
function parseConfigText(text: string): unknown {
  if (text.trim() === '') return {}
  return parseJsonField('config', text)
}

/** Webhooks (docs/webhooks.md): list with status filter, create, a webhook's page and its actions. */
export function registerWebhookPages(
  r: DashboardRoutes,
  webhooks: WebhookService,
  networks: NetworkRegistry,
  db: DB,
) {
  const evmSlugs = () =>
    networks
      .all()
      .filter((n) => n.kind === 'evm')
      .map((n) => n.slug)
  const id = (p: unknown) => (p as { id: string }).id

  r.signedIn('GET', W, async ({ request, session }) => {
    const q = request.query as Record<string, unknown>
    const status =
      typeof q.status === 'string' && (STATUSES as readonly string[]).includes(q.status)
        ? q.status
        : undefined
    const list = await webhooks.list(
      { accountId: session.account_id },
      {
        page: 1,
        limit: 100,
        ...(status ? { status } : {}),
      },
    )
    return layout({
      title: 'Webhooks',
      session,
      current: W,
      body: html`<form method="get" action="${W}" class="filter">
<label for="status">Status</label>
<select id="status" name="status"><option value="">all</option>${STATUSES.map(
        (s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`,
      )}</select>
<button type="submit" class="quiet">Filter</button></form>
${
  list.webhooks.length === 0
    ? html`<p>No webhooks${status ? html` with status ${status}` : ''}.</p>`
    : html`<table><thead><tr><th scope="col">URL</th><th scope="col">Chain</th><th scope="col">Event type</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead><tbody>
${list.webhooks.map(
  (w) =>
    html`<tr><td><a href="${W}/${w.id}">${w.url}</a></td><td>${w.chain}</td><td>${w.event_type}</td><td><span class="status-${w.status}">${w.status}</span></td><td>${when(w.created_at)}</td></tr>`,
)}</tbody></table>`
}
<p><a href="${W}/new">Create a webhook</a></p>`,
    })
  })

  const newPage = (session: SessionWithAccount) =>
    layout({
      title: 'Create a webhook',
      session,
      current: W,
      body: html`<form method="post" action="${W}" class="stack">${csrfField(session)}
<label for="wh-url">Receiver URL (HTTPS)</label>
<input id="wh-url" name="url" type="url" required maxlength="2048">
<label for="wh-chain">Chain</label>
<select id="wh-chain" name="chain">${evmSlugs().map((s) => html`<option value="${s}">${s}</option>`)}</select>
<label for="wh-type">Event type</label>
<select id="wh-type" name="event_type">${EVENT_TYPES.map((t) => html`<option value="${t}">${t}</option>`)}</select>
<label for="wh-config">Config (JSON, per event type)</label>
<textarea id="wh-config" name="config" aria-describedby="wh-config-help">{"addresses": []}</textarea>
<p id="wh-config-help" class="muted">address_activity {"addresses":[…]} · token_transfer {"addresses","contracts","min_value"} · nft_transfer {"addresses","contracts"} · mined_transaction {"tx_hashes":[…]} · log {"addresses","topics"}</p>
<button type="submit">Create webhook</button>
</form>`,
    })

  r.signedIn('GET', `${W}/new`, async ({ session }) => newPage(session))

  r.signedIn('POST', W, async ({ session, form }) => {
    const input = parseForm(createForm, {
      url: field(form, 'url'),
      chain: field(form, 'chain'),
      event_type: field(form, 'event_type'),
      config: field(form, 'config') ?? '',
    })
    const created = await webhooks.create(
      { accountId: session.account_id, email: session.email },
      {
        url: input.url,
        chain: input.chain,
        event_type: input.event_type,
        config: parseConfigText(input.config),
      },
    )
    return detailPage(
      session,
      created.id,
      html`<section class="notice ok" role="status" aria-labelledby="secret-title">
<h2 id="secret-title">Webhook created: its signing secret</h2>
<p>Copy it now: it is shown only this once. Receivers verify each delivery's signature with it.</p>
<p><code class="secret" id="signing-secret">${created.signing_secret}</code> <button type="button" data-copy="signing-secret">Copy</button></p>
</section>`,
    )
  })

  const detailPage = async (session: SessionWithAccount, webhookId: string, top?: Html) => {
    const w = view(await webhooks.get({ accountId: session.account_id }, webhookId))
    const first = await webhooks.deliveries({ accountId: session.account_id }, w.id, { page: 1, limit: 1 })
    const lastPage = Math.max(1, Math.ceil(first.total / 50))
    const attempts = await webhooks.deliveries({ accountId: session.account_id }, w.id, {
      page: lastPage,
      limit: 50,
    })
    const events = await recentEvents(db, w.id)
    const action = (path: string, label: string, cls = '') =>
      html`<form method="post" action="${W}/${w.id}/${path}" class="inline">${csrfField(session)}<button type="submit"${cls ? html` class="${cls}"` : ''}>${label}</button></form> `
    return layout({
      title: `Webhook ${w.id}`,
      session,
      current: W,
      body: html`${top ?? ''}
<p>Status: <span class="status-${w.status}" id="webhook-status">${w.status}</span>${w.status_reason ? html` — ${w.status_reason}` : ''}</p>
<p>${w.status === 'paused' ? html`<form method="post" action="${W}/${w.id}/status" class="inline">${csrfField(session)}<input type="hidden" name="status" value="active"><button type="submit">Resume</button></form> ` : ''}${w.status === 'active' ? html`<form method="post" action="${W}/${w.id}/status" class="inline">${csrfField(session)}<input type="hidden" name="status" value="paused"><button type="submit" class="quiet">Pause</button></form> ` : ''}${action('test', 'Send test event', 'quiet')}</p>
<h2>Configuration</h2>
<table><tbody>
<tr><th scope="row">URL</th><td>${w.url}</td></tr>
<tr><th scope="row">Chain</th><td>${w.chain}</td></tr>
<tr><th scope="row">Event type</th><td>${w.event_type}</td></tr>
<tr><th scope="row">Config</th><td><pre>${JSON.stringify(w.config, null, 2)}</pre></td></tr>
<tr><th scope="row">Created</th><td>${when(w.created_at)}</td></tr>
<tr><th scope="row">Updated</th><td>${when(w.updated_at)}</td></tr>
</tbody></table>
<h2>Recent events</h2>
${
  events.length === 0
    ? html`<p>No events yet.</p>`
    : html`<table><thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Delivered</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>
${events.map(
  (
    e,
  ) => html`<tr><td><code>${e.id}</code></td><td>${e.event_type}</td><td><span class="status-${e.status}">${e.status}</span>${e.last_error ? html`<br><span class="muted">${e.last_error}</span>` : ''}</td><td>${e.attempts}</td><td>${when(e.created_at)}</td><td>${when(e.delivered_at)}</td>
<td>${e.status === 'cancelled' ? '' : html`<form method="post" action="${W}/${w.id}/redeliver" class="inline">${csrfField(session)}<input type="hidden" name="event_id" value="${e.id}"><button type="submit" class="quiet">Redeliver<span class="skip"> ${e.id}</span></button></form>`}</td></tr>`,
)}</tbody></table>`
}
<h2>Delivery attempts</h2>
${
  attempts.deliveries.length === 0
    ? html`<p>No delivery attempts yet.</p>`
    : html`<table><thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">HTTP status</th><th scope="col">Duration</th><th scope="col">Error</th></tr></thead><tbody>
${attempts.deliveries
  .slice()
  .reverse()
  .map(
    (a) =>
      html`<tr><td>${when(a.created_at)}</td><td><code>${a.event_id}</code></td><td>${a.attempt}</td><td>${a.status_code ?? '—'}</td><td>${a.duration_ms} ms</td><td>${a.error ?? ''}</td></tr>`,
  )}</tbody></table>`
}`,
    })
  }

  const DONE = {
    resumed: 'Webhook resumed.',
    paused: 'Webhook paused.',
    test: 'Test event queued; it goes out while the webhook is active.',
    redeliver: 'Event queued for redelivery.',
  } as const
  const back = (reply: FastifyReply, webhookId: string, done: keyof typeof DONE) => {
    reply.redirect(`${W}/${encodeURIComponent(webhookId)}?done=${done}`, 303)
    return undefined
  }

  r.signedIn('GET', `${W}/:id`, async ({ request, session }) =>
    detailPage(session, id(request.params), doneNotice(request.query, DONE)),
  )

  r.signedIn('POST', `${W}/:id/status`, async ({ request, reply, session, form }) => {
    const { status } = parseForm(statusForm, { status: field(form, 'status') })
    await webhooks.update({ accountId: session.account_id }, id(request.params), { status })
    return back(reply, id(request.params), status === 'active' ? 'resumed' : 'paused')
  })

  r.signedIn('POST', `${W}/:id/test`, async ({ request, reply, session }) => {
    await webhooks.sendTest({ accountId: session.account_id }, id(request.params))
    return back(reply, id(request.params), 'test')
  })

  r.signedIn('POST', `${W}/:id/redeliver`, async ({ request, reply, session, form }) => {
    const { event_id } = parseForm(redeliverForm, { event_id: field(form, 'event_id') })
    await webhooks.redeliver({ accountId: session.account_id }, id(request.params), event_id)
    return back(reply, id(request.params), 'redeliver')
  })
}
