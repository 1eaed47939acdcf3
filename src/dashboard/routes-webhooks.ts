import type { NetworkRegistry } from '../chains/registry.ts'
import { view, type WebhookService } from '../webhooks/service.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import { registerWebhookDetailPages } from './routes-webhook-detail.ts'
import type { SessionWithAccount } from './session-store.ts'
import { wantsHtml } from './web.ts'
import {
  emptyValues,
  type FieldError,
  fieldError,
  type HookValues,
  hookForm,
  readValues,
  toInput,
  valuesOf,
} from './webhook-form.ts'

export const W = '/dashboard/webhooks'
const STATUSES = ['active', 'paused', 'disabled'] as const

/** The signing secret, shown once: the answer to the POST that made it, never a page to reload. */
export function secretNotice(title: string, secret: string): Html {
  return html`<section class="notice ok" role="status" aria-labelledby="secret-title">
<h2 id="secret-title">${title}</h2>
<p>Copy it now: it is shown only this once. Receivers verify each delivery's signature with it.</p>
<p><code class="secret" id="signing-secret">${secret}</code> <button type="button" data-copy="signing-secret">Copy</button></p>
</section>`
}

/**
 * Webhooks (docs/webhooks.md): list with status filter, create and edit with every option of
 * the API, rotation of the signing secret, deletion after a confirmation page. Each action calls
 * the WebhookService method the API calls; a refused form comes back as typed, its field marked.
 */
export function registerWebhookPages(
  r: DashboardRoutes,
  webhooks: WebhookService,
  networks: NetworkRegistry,
) {
  const evmSlugs = () =>
    networks
      .all()
      .filter((n) => n.kind === 'evm')
      .map((n) => n.slug)
  const id = (p: unknown) => (p as { id: string }).id
  const owner = (s: SessionWithAccount) => ({ accountId: s.account_id })
  const { detail, back } = registerWebhookDetailPages(r, webhooks)

  r.signedIn('GET', W, async ({ request, session }) => {
    const q = request.query as Record<string, unknown>
    const status =
      typeof q.status === 'string' && (STATUSES as readonly string[]).includes(q.status)
        ? q.status
        : undefined
    const list = await webhooks.list(owner(session), { page: 1, limit: 100, ...(status ? { status } : {}) })
    return layout({
      title: 'Webhooks',
      session,
      current: W,
      body: html`${doneNotice(request.query, { deleted: 'Webhook deleted.' }) ?? ''}<form method="get" action="${W}" class="filter">
<label for="status">Status</label>
<select id="status" name="status"><option value="">all</option>${STATUSES.map(
        (s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`,
      )}</select>
<button type="submit" class="quiet">Filter</button></form>
${
  list.webhooks.length === 0
    ? html`<p>No webhooks${status ? html` with status ${status}` : ''}.</p>`
    : html`<table><thead><tr><th scope="col">URL</th><th scope="col">Chain</th><th scope="col">Event types</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead><tbody>
${list.webhooks.map(
  (w) =>
    html`<tr><td><a href="${W}/${w.id}">${w.url}</a></td><td>${w.chain}</td><td>${w.event_types.join(', ')}</td><td><span class="status-${w.status}">${w.status}</span></td><td>${when(w.created_at)}</td></tr>`,
)}</tbody></table>`
}
<p><a href="${W}/new">Create a webhook</a></p>`,
    })
  })

  const newPage = (session: SessionWithAccount, values: HookValues, error?: FieldError) =>
    layout({
      title: 'Create a webhook',
      session,
      current: W,
      body: hookForm({ session, action: W, submit: 'Create webhook', values, chains: evmSlugs(), error }),
    })

  r.signedIn('GET', `${W}/new`, async ({ session }) => newPage(session, emptyValues(evmSlugs()[0] ?? '')))

  r.signedIn('POST', W, async ({ request, reply, session, form }) => {
    const values = readValues(form)
    let created: Awaited<ReturnType<WebhookService['create']>>
    try {
      created = await webhooks.create(
        { accountId: session.account_id, email: session.email },
        toInput(values),
      )
    } catch (err) {
      // Scripts get the JSON error body; a browser gets its form back, as typed.
      const bad = wantsHtml(request) ? fieldError(err) : undefined
      if (bad === undefined) throw err
      reply.status(400)
      return newPage(session, values, bad)
    }
    reply.status(201)
    return detail(
      session,
      created.id,
      secretNotice('Webhook created: its signing secret', created.signing_secret),
    )
  })

  const editPage = (session: SessionWithAccount, hookId: string, values: HookValues, error?: FieldError) =>
    layout({
      title: `Edit webhook ${hookId}`,
      session,
      current: W,
      body: html`${hookForm({ session, action: `${W}/${hookId}/edit`, submit: 'Save changes', values, chains: undefined, error })}
<p><a href="${W}/${hookId}">Back to the webhook</a></p>`,
    })

  r.signedIn('GET', `${W}/:id/edit`, async ({ request, session }) => {
    const w = view(await webhooks.get(owner(session), id(request.params)))
    return editPage(session, w.id, valuesOf(w))
  })

  r.signedIn('POST', `${W}/:id/edit`, async ({ request, reply, session, form }) => {
    const w = view(await webhooks.get(owner(session), id(request.params)))
    const values = { ...readValues(form), chain: w.chain }
    try {
      const { url, event_types, format, config } = toInput(values)
      await webhooks.update(owner(session), w.id, { url, event_types, format, config })
    } catch (err) {
      // Scripts get the JSON error body; a browser gets its form back, as typed.
      const bad = wantsHtml(request) ? fieldError(err) : undefined
      if (bad === undefined) throw err
      reply.status(400)
      return editPage(session, w.id, values, bad)
    }
    return back(reply, w.id, 'saved')
  })

  r.signedIn('POST', `${W}/:id/rotate-secret`, async ({ request, session }) => {
    const rotated = await webhooks.rotateSecret(owner(session), id(request.params))
    return detail(
      session,
      rotated.id,
      secretNotice('Signing secret rotated: the new secret', rotated.signing_secret),
    )
  })

  r.signedIn('GET', `${W}/:id/delete`, async ({ request, session }) => {
    const w = view(await webhooks.get(owner(session), id(request.params)))
    return layout({
      title: 'Delete this webhook?',
      session,
      current: W,
      body: html`<p>Webhook <code>${w.id}</code> sends ${w.event_types.join(', ')} events of ${w.chain} to <strong>${w.url}</strong>.</p>
<p>Deleting it stops every delivery at once and removes its events and their history. This cannot be undone.</p>
<form method="post" action="${W}/${w.id}/delete" class="inline">${csrfField(session)}<button type="submit" class="danger">Delete webhook</button></form>
<a href="${W}/${w.id}">Keep it</a>`,
    })
  })

  r.signedIn('POST', `${W}/:id/delete`, async ({ request, reply, session }) => {
    await webhooks.delete(owner(session), id(request.params))
    reply.redirect(`${W}?done=deleted`, 303)
    return undefined
  })
}
