import { z } from 'zod'
import type { AuthService, KeyView } from '../auth/service.ts'
import { DAY_MS } from '../limits/limiter.ts'
import { type KeyCounts, keyUsage } from '../requests/store.ts'
import type { Storage } from '../storage/database.ts'
import { utcDay } from '../usage/service.ts'
import { barChart } from './charts.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import { ownKey } from './routes-keys.ts'
import { REQUESTS } from './routes-requests.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, parseForm, textField } from './web.ts'

const KEYS = '/dashboard/settings/api-keys'
/** Days the key page's usage covers, today included. */
const DAYS = 30

const renameSchema = z.object({ name: textField(100) })

const fmt = (n: number) => n.toLocaleString('en-US')

/**
 * Settings → API Keys → one key: its usage per UTC day and per method over the last 30 days
 * (calls, compute units, errors, 429s: every call counted, src/requests), when it was last used,
 * its name (editable here), its allowlists (edited on their own page) and its recent requests.
 */
export function registerKeyUsagePages(r: DashboardRoutes, auth: AuthService, storage: Storage): void {
  r.signedIn('GET', `${KEYS}/:id`, async ({ request, session }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    const now = Date.now()
    const to = utcDay(now)
    const from = utcDay(now - (DAYS - 1) * DAY_MS)
    const usage = await keyUsage(storage.db, key.id, from, to)
    const byDate = new Map(usage.days.map((d) => [d.date, d]))
    const days = Array.from({ length: DAYS }, (_, i) => {
      const date = utcDay(now - (DAYS - 1 - i) * DAY_MS)
      return byDate.get(date) ?? { date, calls: 0, computeUnits: 0, errors: 0, limited: 0 }
    })
    return layout({
      title: `API key ${key.name ?? key.prefix}`,
      session,
      current: KEYS,
      body: html`${doneNotice(request.query, { renamed: 'Name saved.' }) ?? ''}${facts(key)}
<p><a href="${KEYS}/${key.id}/access">Edit allowlists<span class="skip"> of ${key.name ?? key.prefix}</span></a> · <a href="${REQUESTS}?key=${key.id}">Recent requests with this key</a></p>
<h2>Usage, last ${DAYS} days (UTC)</h2>
<p class="muted">Calls: a batch counts each of its calls. Counted in batches: the last few seconds may not show yet.</p>
${barChart({ id: 'key-calls', title: 'Calls per day', bars: days.map((d) => ({ label: d.date.slice(5), value: d.calls })), unit: 'calls' })}
${countsTable(
  'Per day',
  'Day',
  days
    .filter((d) => d.calls > 0)
    .reverse()
    .map((d) => [d.date, d]),
)}
${countsTable(
  `Per method, last ${DAYS} days`,
  'Method',
  usage.methods.map((m) => [m.method, m]),
)}
${renameForm(session, key)}`,
    })
  })

  r.signedIn('POST', `${KEYS}/:id/name`, async ({ request, reply, session, form }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    const { name } = parseForm(renameSchema, { name: field(form, 'name') ?? '' })
    await auth.renameKey(key.id, name === '' ? null : name, session.account_id)
    reply.redirect(`${KEYS}/${key.id}?done=renamed`, 303)
    return undefined
  })
}

function facts(key: KeyView): Html {
  return html`<dl class="facts">
<dt>Prefix</dt><dd><code>${key.prefix}</code> (${key.env})</dd>
<dt>Scopes</dt><dd>${key.scopes.join(', ')}</dd>
<dt>Created</dt><dd>${when(key.created_at)}</dd>
<dt>Last used</dt><dd id="key-last-used">${key.last_used_at ? when(key.last_used_at) : html`<span class="muted">never</span>`}</dd>
<dt>Allowed origins</dt><dd>${key.allowed_origins.join(', ') || html`<span class="muted">any</span>`}</dd>
<dt>Allowed IPs</dt><dd>${key.allowed_ips.join(', ') || html`<span class="muted">any</span>`}</dd>
<dt>Allowed contracts</dt><dd>${key.allowed_contracts.length > 0 ? `${key.allowed_contracts.length} contracts` : html`<span class="muted">any</span>`}</dd>
<dt>Allowed methods</dt><dd>${key.allowed_methods.join(', ') || html`<span class="muted">any</span>`}</dd>
<dt>Status</dt><dd>${key.revoked_at ? html`<span class="status-revoked">revoked</span> ${when(key.revoked_at)}` : html`<span class="status-active">active</span>`}</dd>
</dl>`
}

function countsTable(title: string, first: string, rows: [string, KeyCounts][]): Html {
  if (rows.length === 0) return html`<h3>${title}</h3><p class="muted">No calls.</p>`
  return html`<h3>${title}</h3><table><thead><tr><th scope="col">${first}</th><th scope="col">Calls</th><th scope="col">Compute units</th><th scope="col">Errors</th><th scope="col">429s</th></tr></thead><tbody>
${rows.map(([label, c]) => html`<tr><td>${first === 'Method' ? html`<code>${label}</code>` : label}</td><td>${fmt(c.calls)}</td><td>${fmt(c.computeUnits)}</td><td>${fmt(c.errors)}</td><td>${fmt(c.limited)}</td></tr>`)}
</tbody></table>`
}

function renameForm(session: SessionWithAccount, key: KeyView): Html {
  return html`<h2>Name</h2>
<form method="post" action="${KEYS}/${key.id}/name" class="stack">${csrfField(session)}
<label for="key-rename">Key name</label>
<input id="key-rename" name="name" type="text" maxlength="100" value="${key.name ?? ''}">
<button type="submit">Save name</button>
</form>`
}
