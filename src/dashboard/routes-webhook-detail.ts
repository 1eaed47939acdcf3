import type { FastifyReply } from 'fastify'
import { z } from 'zod'
import { EVENT_STATUSES, type EventStatus } from '../webhooks/event-service.ts'
import { view, type WebhookService } from '../webhooks/service.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, notice, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, parseForm, textField } from './web.ts'

const W = '/dashboard/webhooks'
const statusForm = z.object({ status: z.enum(['active', 'paused'], { error: 'must be active or paused' }) })
const redeliverForm = z.object({ event_id: textField(100).pipe(z.string().min(1, { error: 'is required' })) })
/** datetime-local gives no zone: the form says UTC, and that is how it is read. */
const utcInput = (name: string) =>
  textField(40).pipe(
    z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/, {
        error: 'must be a date and time (YYYY-MM-DDTHH:MM, UTC)',
      })
      .transform((v) => new Date(`${v}Z`))
      .refine((d) => !Number.isNaN(d.getTime()), { error: `${name} is not a real date` }),
  )
const rangeForm = z.object({ from: utcInput('from'), to: utcInput('to') })
const minute = (d: Date) => d.toISOString().slice(0, 16)

const DONE = {
  resumed: 'Webhook resumed.',
  paused: 'Webhook paused.',
  saved: 'Webhook saved.',
  test: 'Test event queued; it goes out while the webhook is active.',
  redeliver: 'Event queued for redelivery.',
} as const

/** A webhook's page (settings, actions, events, attempts) and an event's page (payload, attempts, why it matched). */
export function registerWebhookDetailPages(r: DashboardRoutes, webhooks: WebhookService) {
  const id = (p: unknown) => (p as { id: string }).id
  const owner = (s: SessionWithAccount) => ({ accountId: s.account_id })

  const detail = async (
    session: SessionWithAccount,
    webhookId: string,
    top?: Html,
    eventStatus?: EventStatus,
  ) => {
    const w = view(await webhooks.get(owner(session), webhookId))
    const events = await webhooks.events.list(owner(session), w.id, {
      page: 1,
      limit: 25,
      ...(eventStatus ? { status: eventStatus } : {}),
    })
    const post = (path: string, label: Html | string, cls = '', hidden: Html | string = '') =>
      html`<form method="post" action="${W}/${w.id}/${path}" class="inline">${csrfField(session)}${hidden}<button type="submit"${cls ? html` class="${cls}"` : ''}>${label}</button></form> `
    // The most recent attempts of every event (the API's delivery history, newest last page).
    const first = await webhooks.deliveries(owner(session), w.id, { page: 1, limit: 1 })
    const attempts = await webhooks.deliveries(owner(session), w.id, {
      page: Math.max(1, Math.ceil(first.total / 25)),
      limit: 25,
    })
    const now = new Date()
    const status = (s: string) => html`<input type="hidden" name="status" value="${s}">`
    return layout({
      title: `Webhook ${w.id}`,
      session,
      current: W,
      body: html`${top ?? ''}
<p>Status: <span class="status-${w.status}" id="webhook-status">${w.status}</span>${w.status_reason ? html` — ${w.status_reason}` : ''}</p>
<p>${w.status === 'paused' ? post('status', 'Resume', '', status('active')) : ''}${w.status === 'active' ? post('status', 'Pause', 'quiet', status('paused')) : ''}${post('test', 'Send test event', 'quiet')}<a href="${W}/${w.id}/edit">Edit webhook</a> · ${post('rotate-secret', 'Rotate signing secret', 'quiet')}<a href="${W}/${w.id}/delete">Delete webhook</a></p>
<h2>Configuration</h2>
<table><tbody>
<tr><th scope="row">URL</th><td id="webhook-url">${w.url}</td></tr>
<tr><th scope="row">Chain</th><td>${w.chain}</td></tr>
<tr><th scope="row">Event types</th><td>${w.event_types.join(', ')}</td></tr>
<tr><th scope="row">Delivery form</th><td>${w.format}</td></tr>
<tr><th scope="row">Filters</th><td><pre>${JSON.stringify(w.config, null, 2)}</pre></td></tr>
<tr><th scope="row">Created</th><td>${when(w.created_at)}</td></tr>
<tr><th scope="row">Updated</th><td>${when(w.updated_at)}</td></tr>
</tbody></table>
<h2>Events</h2>
<form method="get" action="${W}/${w.id}" class="filter"><label for="ev-status">Event status</label>
<select id="ev-status" name="events"><option value="">all</option>${EVENT_STATUSES.map((s) => html`<option value="${s}"${s === eventStatus ? html` selected` : ''}>${s}</option>`)}</select>
<button type="submit" class="quiet">Show</button></form>
${
  events.events.length === 0
    ? html`<p>No events${eventStatus ? html` with status ${eventStatus}` : ' yet'}.</p>`
    : html`<table><caption>The ${events.events.length} most recent of ${events.total}.</caption><thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Next retry</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>
${events.events.map(
  (e) =>
    html`<tr><td><a href="${W}/${w.id}/events/${e.id}">${e.id}</a></td><td>${e.event_type}</td><td><span class="status-${e.status}">${e.status}</span>${e.last_error ? html`<br><span class="muted">${e.last_error}</span>` : ''}</td><td>${e.attempts}</td><td>${when(e.created_at)}</td><td>${when(e.next_retry_at)}</td>
<td>${e.status === 'cancelled' ? '' : post('redeliver', html`Redeliver<span class="skip"> ${e.id}</span>`, 'quiet', html`<input type="hidden" name="event_id" value="${e.id}">`)}</td></tr>`,
)}</tbody></table>`
}
<h3>Redeliver every failed event of a time range</h3>
<form method="post" action="${W}/${w.id}/redeliver-failed" class="filter">${csrfField(session)}
<label for="rf-from">From (UTC)</label> <input id="rf-from" name="from" type="datetime-local" value="${minute(new Date(now.getTime() - 86_400_000))}">
<label for="rf-to">To (UTC)</label> <input id="rf-to" name="to" type="datetime-local" value="${minute(new Date(now.getTime() + 60_000))}">
<button type="submit" class="quiet">Redeliver failed events</button></form>
<h2>Recent delivery attempts</h2>
${
  attempts.deliveries.length === 0
    ? html`<p>No delivery attempts yet.</p>`
    : html`<table><thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">HTTP status</th><th scope="col">Latency</th><th scope="col">Error</th></tr></thead><tbody>
${attempts.deliveries
  .slice()
  .reverse()
  .map(
    (a) =>
      html`<tr><td>${when(a.created_at)}</td><td><code>${a.event_id}</code></td><td>${a.attempt}</td><td>${a.status_code ?? '—'}</td><td class="num">${a.duration_ms} ms</td><td>${a.error ?? ''}</td></tr>`,
  )}</tbody></table>`
}`,
    })
  }

  const back = (reply: FastifyReply, webhookId: string, done: keyof typeof DONE) => {
    reply.redirect(`${W}/${encodeURIComponent(webhookId)}?done=${done}`, 303)
    return undefined
  }

  r.signedIn('GET', `${W}/:id`, async ({ request, session }) => {
    const q = (request.query as Record<string, unknown>).events
    const status = (EVENT_STATUSES as readonly unknown[]).includes(q) ? (q as EventStatus) : undefined
    return detail(session, id(request.params), doneNotice(request.query, DONE), status)
  })

  r.signedIn('GET', `${W}/:id/events/:event_id`, async ({ request, session }) => {
    const p = request.params as { id: string; event_id: string }
    const ev = await webhooks.events.detail(owner(session), p.id, p.event_id)
    return layout({
      title: `Event ${ev.id}`,
      session,
      current: W,
      body: html`<p>Webhook <a href="${W}/${p.id}">${p.id}</a> · ${ev.event_type} · <span class="status-${ev.status}" id="event-status">${ev.status}</span>${ev.status === 'cancelled' ? '' : html` · <form method="post" action="${W}/${p.id}/redeliver" class="inline">${csrfField(session)}<input type="hidden" name="event_id" value="${ev.id}"><button type="submit" class="quiet">Redeliver this event</button></form>`}</p>
<table><tbody>
<tr><th scope="row">Created</th><td>${when(ev.created_at)}</td></tr>
<tr><th scope="row">Delivered</th><td>${when(ev.delivered_at)}</td></tr>
<tr><th scope="row">Next retry</th><td>${when(ev.next_retry_at)}</td></tr>
<tr><th scope="row">Last error</th><td>${ev.last_error ?? '—'}</td></tr>
</tbody></table>
<h2>Why it matched</h2>
${
  ev.test
    ? html`<p>A test event (Send test event): it goes to the webhook whatever its filters.</p>`
    : ev.matched_by.length === 0
      ? html`<p>None of the webhook's current filters matches this event: they were changed after it was made.</p>`
      : html`<ul id="matched-by">${ev.matched_by.map((m) => html`<li><code>${m}</code></li>`)}</ul><p class="muted">Worked out from the payload against the webhook's filters as they are now.</p>`
}
<h2>Payload</h2>
<pre id="event-payload" tabindex="0" aria-label="Payload">${JSON.stringify(ev.payload, null, 2)}</pre>
<h2>Attempts</h2>
${
  ev.attempts.length === 0
    ? html`<p>No attempt yet.</p>`
    : html`<table><thead><tr><th scope="col">Attempt</th><th scope="col">Time</th><th scope="col">HTTP status</th><th scope="col">Latency</th><th scope="col">Response (first bytes)</th><th scope="col">Error</th></tr></thead><tbody>
${ev.attempts.map(
  (a) =>
    html`<tr><td>${a.attempt}</td><td>${when(a.created_at)}</td><td>${a.status_code ?? '—'}</td><td class="num">${a.duration_ms} ms</td><td>${a.response_body === null ? html`<span class="muted">—</span>` : html`<code>${a.response_body}</code>`}</td><td>${a.error ?? ''}</td></tr>`,
)}</tbody></table>`
}`,
    })
  })

  r.signedIn('POST', `${W}/:id/status`, async ({ request, reply, session, form }) => {
    const { status } = parseForm(statusForm, { status: field(form, 'status') })
    await webhooks.update(owner(session), id(request.params), { status })
    return back(reply, id(request.params), status === 'active' ? 'resumed' : 'paused')
  })

  r.signedIn('POST', `${W}/:id/test`, async ({ request, reply, session }) => {
    await webhooks.sendTest(owner(session), id(request.params))
    return back(reply, id(request.params), 'test')
  })

  r.signedIn('POST', `${W}/:id/redeliver`, async ({ request, reply, session, form }) => {
    const { event_id } = parseForm(redeliverForm, { event_id: field(form, 'event_id') })
    await webhooks.redeliver(owner(session), id(request.params), event_id)
    return back(reply, id(request.params), 'redeliver')
  })

  r.signedIn('POST', `${W}/:id/redeliver-failed`, async ({ request, reply, session, form }) => {
    const range = parseForm(rangeForm, { from: field(form, 'from'), to: field(form, 'to') })
    const done = await webhooks.events.redeliverFailed(owner(session), id(request.params), range)
    reply.status(200)
    return detail(
      session,
      done.webhook_id,
      notice('ok', `${done.requeued} failed event(s) from ${done.from} to ${done.to} queued for redelivery.`),
    )
  })

  return { detail, back }
}
