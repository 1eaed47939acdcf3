import { z } from 'zod'
import { splitList } from '../auth/allowlists.ts'
import { HalyardError, invalidRequest } from '../errors.ts'
import { EVENT_TYPES, type EventType, type WebhookConfig } from '../webhooks/config.ts'
import { type DeliveryFormat, FORMATS } from '../webhooks/form-b.ts'
import type { WebhookView } from '../webhooks/service.ts'
import { type Html, html } from './html.ts'
import { csrfField, notice } from './layout.ts'
import type { SessionWithAccount } from './session-store.ts'
import { type Form, field, fields, parseForm, parseJsonField } from './web.ts'

/** The filters as the form shows them: one text field each (lists one entry per line). */
const FILTERS = {
  addresses: {
    label: 'Addresses',
    hint: 'One per line. Transfers and transactions from or to one of them; for log, the emitting contracts. Required for address_activity and pending_transaction.',
  },
  address_match: { label: 'Address side', hint: 'Which side of a transfer the addresses must be on.' },
  contracts: { label: 'Token contracts', hint: 'One per line (token_transfer, nft_transfer).' },
  min_value: {
    label: 'Minimum value',
    hint: 'In base units, as a whole number (wei for native value; raw token amount).',
  },
  min_value_per_contract: {
    label: 'Minimum value per contract',
    hint: 'token_transfer: one "contract=amount" per line; other contracts use the minimum value.',
  },
  selectors: {
    label: 'Function selectors',
    hint: 'address_activity: 4-byte selectors, one per line (0xa9059cbb).',
  },
  tx_hashes: { label: 'Transaction hashes', hint: 'mined_transaction (required): one per line.' },
  topics: {
    label: 'Log topics',
    hint: 'log: a JSON array as in eth_getLogs, at most 4 positions (null = any; a list = any of them).',
  },
} as const
type FilterName = keyof typeof FILTERS
const FILTER_NAMES = Object.keys(FILTERS) as FilterName[]

/** Everything the form holds, as typed: what a refused form shows again. */
export type HookValues = { url: string; chain: string; types: string[]; format: string } & Record<
  FilterName,
  string
>
export type HookField = 'url' | 'chain' | 'types' | 'format' | FilterName
export interface FieldError {
  field: HookField | undefined
  message: string
}

const text = z.string().max(65_536, { error: 'must be at most 65536 characters' })
const valuesSchema = z.object({
  url: text,
  chain: text,
  format: text,
  ...Object.fromEntries(FILTER_NAMES.map((n) => [n, text])),
})

export function readValues(form: Form): HookValues {
  const plain = parseForm(valuesSchema, {
    url: field(form, 'url') ?? '',
    chain: field(form, 'chain') ?? '',
    format: field(form, 'format') ?? 'A',
    ...Object.fromEntries(FILTER_NAMES.map((n) => [n, field(form, n) ?? ''])),
  }) as Omit<HookValues, 'types'>
  return { ...plain, url: plain.url.trim(), types: fields(form, 'event_types') }
}

export function valuesOf(w: WebhookView): HookValues {
  const c = w.config
  const lines = (l: readonly string[] | undefined) => (l ?? []).join('\n')
  return {
    url: w.url,
    chain: w.chain,
    types: w.event_types,
    format: w.format,
    addresses: lines(c.addresses),
    address_match: c.address_match ?? '',
    contracts: lines(c.contracts),
    min_value: c.min_value ?? '',
    min_value_per_contract: Object.entries(c.min_value_per_contract ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
    selectors: lines(c.selectors),
    tx_hashes: lines(c.tx_hashes),
    topics: c.topics ? JSON.stringify(c.topics) : '',
  }
}

export const emptyValues = (chain: string): HookValues => ({
  url: '',
  chain,
  types: ['address_activity'],
  format: 'A',
  ...(Object.fromEntries(FILTER_NAMES.map((n) => [n, ''])) as Record<FilterName, string>),
})

/**
 * The API's create/PATCH input from the form: the same service call the API makes. The form
 * checks only what it alone knows (its own line formats); the service names everything else.
 */
export function toInput(v: HookValues) {
  const bad = v.types.find((t) => !(EVENT_TYPES as readonly string[]).includes(t))
  if (bad !== undefined) throw invalidRequest(`event_types: "${bad.slice(0, 40)}" is not an event type`)
  if (v.types.length === 0) throw invalidRequest('event_types: choose at least one event type')
  if (!(FORMATS as readonly string[]).includes(v.format)) throw invalidRequest('format: must be A or B')
  const config: Record<string, unknown> = {}
  for (const n of ['addresses', 'contracts', 'selectors', 'tx_hashes'] as const) {
    const list = splitList(v[n])
    if (list.length > 0) config[n] = list
  }
  if (v.address_match !== '') config.address_match = v.address_match
  if (v.min_value.trim() !== '') config.min_value = v.min_value.trim()
  const per: Record<string, string> = {}
  for (const line of v.min_value_per_contract
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)) {
    const m = /^(\S+)\s*[=\s]\s*(\S+)$/.exec(line)
    if (!m)
      throw invalidRequest(`min_value_per_contract: line "${line.slice(0, 60)}" must be contract=amount`)
    per[m[1] as string] = m[2] as string
  }
  if (Object.keys(per).length > 0) config.min_value_per_contract = per
  if (v.topics.trim() !== '') config.topics = parseJsonField('topics', v.topics)
  return {
    url: v.url,
    chain: v.chain,
    event_types: v.types as EventType[],
    format: v.format as DeliveryFormat,
    config: config as WebhookConfig,
  }
}

/** The form field a refusal names (service messages start with the field, or name config.<filter>). */
export function fieldError(err: unknown): FieldError | undefined {
  if (!(err instanceof HalyardError) || err.status !== 400) return undefined
  const m = err.message
  const filter = /config\.(\w+)/.exec(m)?.[1] ?? /^config: (\w+) is not a filter/.exec(m)?.[1]
  const lead = /^(\w+):/.exec(m)?.[1]
  const known = (f: string | undefined): HookField | undefined => {
    if (f === undefined) return undefined
    if (f === 'event_type' || f === 'event_types' || f === 'invalid') return 'types'
    return ['url', 'chain', 'format', ...FILTER_NAMES].includes(f) ? (f as HookField) : undefined
  }
  return { field: known(filter) ?? known(lead), message: m }
}

/** The create and edit form: every option of the API, each field labelled, its error beside it. */
export function hookForm(o: {
  session: SessionWithAccount
  action: string
  submit: string
  values: HookValues
  chains: readonly string[] | undefined
  error?: FieldError | undefined
}): Html {
  const { values: v, error } = o
  const err = (f: HookField, id: string) =>
    error?.field === f ? html`<p class="notice error" id="${id}-error">${error.message}</p>` : ''
  const aria = (f: HookField, id: string, hint = false) => {
    const bad = error?.field === f
    const described = [hint ? `${id}-hint` : '', bad ? `${id}-error` : ''].filter(Boolean).join(' ')
    return html`${described ? html` aria-describedby="${described}"` : ''}${bad ? html` aria-invalid="true"` : ''}`
  }
  const filter = (n: FilterName) => {
    const id = `wh-${n.replaceAll('_', '-')}`
    const f = FILTERS[n]
    const control =
      n === 'address_match'
        ? html`<select id="${id}" name="${n}"${aria(n, id, true)}>${['', 'either', 'from', 'to'].map(
            (s) =>
              html`<option value="${s}"${v.address_match === s ? html` selected` : ''}>${s === '' ? 'default (either)' : s}</option>`,
          )}</select>`
        : n === 'min_value'
          ? html`<input id="${id}" name="${n}" type="text" inputmode="numeric" value="${v[n]}"${aria(n, id, true)}>`
          : html`<textarea id="${id}" name="${n}" rows="3"${aria(n, id, true)}>${v[n]}</textarea>`
    return html`<div class="field"><label for="${id}">${f.label}</label>
<p class="muted" id="${id}-hint">${f.hint}</p>${err(n, id)}
${control}</div>`
  }
  return html`${error && error.field === undefined ? notice('error', error.message) : error ? html`<p class="notice error" role="alert">Not saved: one field needs a change (marked below). Everything typed is kept.</p>` : ''}
<form method="post" action="${o.action}" class="stack">${csrfField(o.session)}
<label for="wh-url">Receiver URL (HTTPS)</label>${err('url', 'wh-url')}
<input id="wh-url" name="url" type="text" inputmode="url" autocomplete="url" required maxlength="2048" value="${v.url}"${aria('url', 'wh-url')}>
${
  o.chains
    ? html`<label for="wh-chain">Chain</label>${err('chain', 'wh-chain')}
<select id="wh-chain" name="chain"${aria('chain', 'wh-chain')}>${o.chains.map((s) => html`<option value="${s}"${s === v.chain ? html` selected` : ''}>${s}</option>`)}</select>`
    : html`<p>Chain: <strong>${v.chain}</strong> (a webhook keeps its chain)</p>`
}
<fieldset${error?.field === 'types' ? html` aria-describedby="wh-types-error"` : ''}><legend>Event types</legend>${err('types', 'wh-types')}
${EVENT_TYPES.map(
  (t) =>
    html`<label class="check"><input type="checkbox" name="event_types" value="${t}"${v.types.includes(t) ? html` checked` : ''}> ${t}</label>`,
)}</fieldset>
<fieldset><legend>Delivery form</legend>${err('format', 'wh-format')}
<label class="check"><input type="radio" name="format" value="A"${v.format !== 'B' ? html` checked` : ''}> A: timestamped signature (X-Service-Signature over timestamp.body)</label>
<label class="check"><input type="radio" name="format" value="B"${v.format === 'B' ? html` checked` : ''}> B: Alchemy/QuickNode style (signature over the body, camelCase data)</label>
</fieldset>
<fieldset><legend>Filters</legend>
<p class="muted">Each event type reads its own filters; a filter no chosen type reads is refused. Leave a field empty for no filter.</p>
${FILTER_NAMES.map(filter)}
</fieldset>
<button type="submit">${o.submit}</button>
</form>`
}
