import { z } from 'zod'
import { ALLOWLIST_FIELDS, ALLOWLIST_NAMES, type AllowlistName, splitList } from '../auth/allowlists.ts'
import type { AllowlistInput, AuthService, KeyView } from '../auth/service.ts'
import { HalyardError, notFound } from '../errors.ts'
import { type Html, html } from './html.ts'
import { csrfField, layout, notice } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, parseForm } from './web.ts'

const KEYS = '/dashboard/settings/api-keys'

const LABELS: Record<AllowlistName, { label: string; hint: string }> = {
  origins: {
    label: 'Allowed origins',
    hint: 'https://app.example.com, or *.example.com for every subdomain. Requests from other origins, or without an Origin header, are refused.',
  },
  ips: {
    label: 'Allowed client IPs',
    hint: 'Addresses or CIDR ranges: 203.0.113.7, 10.0.0.0/8, 2001:db8::/32.',
  },
  contracts: {
    label: 'Allowed contracts',
    hint: 'Addresses that eth_call, eth_estimateGas, eth_getLogs (address filter required) and transactions may target.',
  },
  methods: { label: 'Allowed methods', hint: 'JSON-RPC method names: eth_blockNumber, eth_call, …' },
}

/** Each list is a text area of at most 64 KiB: one entry per line (or comma-separated). */
const listField = z.string().max(65_536, { error: 'must be at most 65536 characters' })
const accessForm = z.object({
  allowed_origins: listField,
  allowed_ips: listField,
  allowed_contracts: listField,
  allowed_methods: listField,
})

/** A list's field error: the service names the list first (`allowed_ips: entry "x" is not …`). */
function fieldOf(err: HalyardError): AllowlistName | undefined {
  return ALLOWLIST_NAMES.find((n) => err.message.startsWith(`${ALLOWLIST_FIELDS[n]}:`))
}

/**
 * Settings → API Keys → a key's allowlists (docs/browser.md): four text areas, saved
 * together. A bad entry re-shows the form as typed, with the error next to its field (400).
 */
export function registerKeyAccessPages(r: DashboardRoutes, auth: AuthService): void {
  const url = (id: string) => `${KEYS}/${id}/access`

  r.signedIn('GET', `${KEYS}/:id/access`, async ({ request, session }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    const values = Object.fromEntries(
      ALLOWLIST_NAMES.map((n) => [n, key[`allowed_${n}`].join('\n')]),
    ) as Record<AllowlistName, string>
    return accessPage(session, key, url(key.id), values)
  })

  r.signedIn('POST', `${KEYS}/:id/access`, async ({ request, reply, session, form }) => {
    const key = await ownKey(auth, session, (request.params as { id: string }).id)
    const input = parseForm(accessForm, {
      allowed_origins: field(form, 'allowed_origins') ?? '',
      allowed_ips: field(form, 'allowed_ips') ?? '',
      allowed_contracts: field(form, 'allowed_contracts') ?? '',
      allowed_methods: field(form, 'allowed_methods') ?? '',
    })
    const values = {
      origins: input.allowed_origins,
      ips: input.allowed_ips,
      contracts: input.allowed_contracts,
      methods: input.allowed_methods,
    }
    const lists: AllowlistInput = {}
    for (const n of ALLOWLIST_NAMES) lists[n] = splitList(values[n])
    try {
      await auth.updateKeyAllowlists(key.id, lists, session.account_id)
    } catch (err) {
      const where = err instanceof HalyardError && err.status === 400 ? fieldOf(err) : undefined
      if (where === undefined) throw err
      reply.status(400)
      return accessPage(session, key, url(key.id), values, { field: where, message: (err as Error).message })
    }
    reply.redirect(`${KEYS}?done=access`, 303)
    return undefined
  })
}

function accessPage(
  session: SessionWithAccount,
  key: KeyView,
  action: string,
  values: Record<AllowlistName, string>,
  error?: { field: AllowlistName; message: string },
): Html {
  return layout({
    title: 'API key allowlists',
    session,
    current: KEYS,
    body: html`${error ? notice('error', error.message) : ''}
<p>Allowlists of <strong>${key.name ?? key.prefix}</strong> (<code>${key.prefix}</code>, ${key.env}). An empty list places no restriction. Changes take effect within a second.</p>
<form method="post" action="${action}" class="stack">${csrfField(session)}
${ALLOWLIST_NAMES.map((n) => {
  const id = `allow-${n}`
  const bad = error?.field === n
  return html`<label for="${id}">${LABELS[n].label}</label>
<p class="muted" id="${id}-hint">${LABELS[n].hint} One per line.</p>
${bad ? html`<p class="notice error" id="${id}-error">${error.message}</p>` : ''}
<textarea id="${id}" name="${ALLOWLIST_FIELDS[n]}" rows="4" aria-describedby="${id}-hint${bad ? ` ${id}-error` : ''}"${bad ? html` aria-invalid="true"` : ''}>${values[n]}</textarea>`
})}
<button type="submit">Save allowlists</button>
</form>
<a href="${KEYS}">Back to API keys</a>`,
  })
}

/** The key, if it belongs to the signed-in account (another account's id is a 404 like any unknown one). */
async function ownKey(auth: AuthService, session: SessionWithAccount, id: string): Promise<KeyView> {
  const key = (await auth.listKeys(session.email)).find((k) => k.id === id)
  if (!key) throw notFound(`key: no key with id ${id.slice(0, 100)}`)
  return key
}
