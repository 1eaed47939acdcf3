import { z } from 'zod'
import { ALLOWLIST_NAMES } from '../auth/allowlists.ts'
import { SCOPES } from '../auth/scopes.ts'
import type { AuthService, KeyView } from '../auth/service.ts'
import { notFound } from '../errors.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, fields, parseForm, textField } from './web.ts'

const createKeyForm = z.object({
  name: textField(100),
  env: z.enum(['test', 'live'], { error: 'must be test or live' }),
  scopes: z.array(z.enum(SCOPES, { error: `must be among ${SCOPES.join(', ')}` })).max(SCOPES.length),
})

const KEYS = '/dashboard/settings/api-keys'

/** Settings → API Keys: list, create (key shown once), revoke with confirmation. */
export function registerKeyPages(r: DashboardRoutes, auth: AuthService): void {
  const page = async (session: SessionWithAccount, top?: Html) =>
    layout({
      title: 'API Keys',
      session,
      current: KEYS,
      body: html`${top ?? ''}${keyTable(await auth.listKeys(session.email))}${createForm(session)}`,
    })

  r.signedIn('GET', KEYS, async ({ request, session }) =>
    page(session, doneNotice(request.query, { revoked: 'Key revoked.', access: 'Allowlists saved.' })),
  )

  r.signedIn('POST', KEYS, async ({ session, form }) => {
    const input = parseForm(createKeyForm, {
      name: field(form, 'name') ?? '',
      env: field(form, 'env'),
      scopes: fields(form, 'scopes'),
    })
    const created = await auth.createKey({
      accountEmail: session.email,
      env: input.env,
      scopes: input.scopes,
      name: input.name === '' ? undefined : input.name,
    })
    return page(
      session,
      html`<section class="notice ok" role="status" aria-labelledby="new-key-title">
<h2 id="new-key-title">Your new key</h2>
<p>Copy it now: it is shown only this once.</p>
<p><code class="secret" id="new-key">${created.key}</code> <button type="button" data-copy="new-key">Copy</button></p>
</section>`,
    )
  })

  r.signedIn('GET', `${KEYS}/:id/revoke`, async ({ request, session }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    return layout({
      title: 'Revoke API key',
      session,
      current: KEYS,
      body: html`<p>Revoke <strong>${key.name ?? key.prefix}</strong> (${key.prefix}, ${key.env})? Requests with it get 401 within a second. This cannot be undone.</p>
<form method="post" action="${KEYS}/${key.id}/revoke" class="inline">${csrfField(session)}<button type="submit" class="danger">Revoke key</button></form>
<a href="${KEYS}">Cancel</a>`,
    })
  })

  r.signedIn('POST', `${KEYS}/:id/revoke`, async ({ request, reply, session }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    if (!key.revoked_at) await auth.revokeKey(key.id)
    reply.redirect(`${KEYS}?done=revoked`, 303)
    return undefined
  })
}

/** The key, if it belongs to the signed-in account (another account's id is a 404 like any unknown one). */
export async function ownKey(auth: AuthService, session: SessionWithAccount, id: string): Promise<KeyView> {
  const key = (await auth.listKeys(session.email)).find((k) => k.id === id)
  if (!key) throw notFound(`key: no key with id ${id.slice(0, 100)}`)
  return key
}

function keyTable(keys: KeyView[]): Html {
  if (keys.length === 0) return html`<p>No keys yet.</p>`
  return html`<table><caption class="muted">Last used is recorded every few seconds, so it may lag a little.</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Env</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Allowlists</th><th scope="col">Status</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>
${keys.map(
  (
    k,
  ) => html`<tr><td><a href="${KEYS}/${k.id}">${k.name ?? '(unnamed)'}<span class="skip"> key ${k.prefix}: usage and settings</span></a></td><td>${k.env}</td><td><code>${k.prefix}</code></td>
<td>${k.scopes.join(', ')}</td><td>${when(k.created_at)}</td><td>${k.last_used_at ? when(k.last_used_at) : html`<span class="muted">never</span>`}</td>
<td>${allowSummary(k)}${k.revoked_at ? '' : html` <a href="${KEYS}/${k.id}/access">Edit<span class="skip"> allowlists of ${k.name ?? k.prefix}</span></a>`}</td>
<td>${k.revoked_at ? html`<span class="status-revoked">revoked</span> ${when(k.revoked_at)}` : html`<span class="status-active">active</span>`}</td>
<td>${k.revoked_at ? '' : html`<a href="${KEYS}/${k.id}/revoke">Revoke<span class="skip"> ${k.name ?? k.prefix}</span></a>`}</td></tr>`,
)}
</tbody></table>`
}

/** "none" or the lists a key has, with their sizes: `origins (2), methods (5)`. */
function allowSummary(k: KeyView): Html | string {
  const set = ALLOWLIST_NAMES.filter((n) => k[`allowed_${n}`].length > 0)
  if (set.length === 0) return html`<span class="muted">none</span>`
  return set.map((n) => `${n} (${k[`allowed_${n}`].length})`).join(', ')
}

function createForm(session: SessionWithAccount): Html {
  return html`<h2>Create a key</h2>
<form method="post" action="${KEYS}" class="stack">${csrfField(session)}
<label for="key-name">Name</label>
<input id="key-name" name="name" type="text" maxlength="100">
<fieldset><legend>Environment</legend>
<label><input type="radio" name="env" value="test" checked> test (devnets and testnets)</label>
<label><input type="radio" name="env" value="live"> live (every network, mainnet included)</label>
</fieldset>
<fieldset><legend>Scopes (none ticked: every scope)</legend>
${SCOPES.map((s) => html`<label><input type="checkbox" name="scopes" value="${s}"> ${s}</label> `)}
</fieldset>
<button type="submit">Create key</button>
</form>`
}
