import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { invalidRequest } from '../errors.ts'
import { type Address, addressProblem, type Hash, toLowerAddress, toLowerHash } from '../types.ts'

/**
 * Webhook `config` per event type (docs/webhooks.md): address_activity
 * {addresses, address_match?, min_value?, selectors?}, token_transfer {addresses?,
 * address_match?, contracts?, min_value?, min_value_per_contract?}, nft_transfer {addresses?,
 * address_match?, contracts?}, mined_transaction {tx_hashes}, log {addresses?, topics?}
 * (topics as in eth_getLogs), new_block {}, internal_transfer {addresses?, address_match?,
 * min_value?}, pending_transaction {addresses}. Every filter runs in the matcher, before an event row exists.
 * Unknown keys are refused, so a typo never silently widens a filter. Lists hold at most
 * MAX_ITEMS entries: a webhook watching more addresses is split into several webhooks.
 */
export const EVENT_TYPES = [
  'address_activity',
  'token_transfer',
  'nft_transfer',
  'mined_transaction',
  'log',
  'new_block',
  'internal_transfer',
  'pending_transaction',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

export const MAX_ITEMS = 1000

const address = z
  .string()
  .superRefine((s, ctx) => {
    const problem = addressProblem(s)
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem })
  })
  .transform(toLowerAddress)
const hash = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte hex hash')
  .transform(toLowerHash)
const list = <T extends z.ZodType>(item: T, required: boolean) => {
  const base = z.array(item).max(MAX_ITEMS, `at most ${MAX_ITEMS} entries per webhook`)
  return required ? base.min(1, 'must list at least one entry') : base.optional()
}
const decimal = z
  .string()
  .regex(/^\d{1,78}$/, 'must be a non-negative integer as a decimal string (base units)')
  .transform((s) => BigInt(s).toString())

const topicSlot = z.union([z.null(), hash, z.array(hash).min(1).max(MAX_ITEMS)])
const addressMatch = z.enum(['either', 'from', 'to'], { error: 'must be either, from or to' }).optional()
const selector = z
  .string()
  .regex(/^0x[0-9a-fA-F]{8}$/, 'must be a 4-byte function selector such as 0xa9059cbb')
  .transform((s) => s.toLowerCase())
const minPerContract = z
  .record(address, decimal)
  .refine((r) => Object.keys(r).length <= MAX_ITEMS, `at most ${MAX_ITEMS} entries per webhook`)
  .optional()

const schemas = {
  address_activity: z.strictObject({
    addresses: list(address, true),
    address_match: addressMatch,
    min_value: decimal.optional(),
    selectors: list(selector, false),
  }),
  token_transfer: z.strictObject({
    addresses: list(address, false),
    address_match: addressMatch,
    contracts: list(address, false),
    min_value: decimal.optional(),
    min_value_per_contract: minPerContract,
  }),
  nft_transfer: z.strictObject({
    addresses: list(address, false),
    address_match: addressMatch,
    contracts: list(address, false),
  }),
  mined_transaction: z.strictObject({ tx_hashes: list(hash, true) }),
  new_block: z.strictObject({}),
  pending_transaction: z.strictObject({ addresses: list(address, true) }),
  internal_transfer: z.strictObject({
    addresses: list(address, false),
    address_match: addressMatch,
    min_value: decimal.optional(),
  }),
  log: z.strictObject({
    addresses: list(address, false),
    topics: z.array(topicSlot).max(4, 'at most 4 topic positions').optional(),
  }),
} as const

export interface WebhookConfig {
  addresses?: Address[]
  /** Which side of a transfer or transaction `addresses` must be on (default either). */
  address_match?: 'either' | 'from' | 'to'
  contracts?: Address[]
  min_value?: string
  /** Raw minimum per token contract (lowercase address → base units); others use min_value. */
  min_value_per_contract?: Record<string, string>
  /** 4-byte function selectors of the transaction (lowercase 0x…). */
  selectors?: string[]
  tx_hashes?: Hash[]
  topics?: Array<Hash | Hash[] | null>
}

/** Validates and normalises (lowercase, de-duplicated) a config; a 400 names the bad field. */
export function parseConfig(eventType: EventType, raw: unknown): WebhookConfig {
  const parsed = schemas[eventType].safeParse(raw ?? {})
  if (!parsed.success)
    throw invalidRequest(`invalid config for ${eventType}: ${describeZodError(parsed.error, 'config')}`)
  const cfg = parsed.data as WebhookConfig
  for (const key of ['addresses', 'contracts', 'tx_hashes', 'selectors'] as const) {
    const v = cfg[key]
    if (v) (cfg as Record<string, unknown>)[key] = [...new Set<string>(v)]
  }
  return cfg
}

/** Event types one webhook may monitor at most (`event_types`). */
export const MAX_EVENT_TYPES = EVENT_TYPES.length

/** The event types a stored webhook monitors: `event_types`, or `event_type` alone (rows before 0111). */
export function typesOf(row: { event_type: string; event_types?: readonly string[] | null }): EventType[] {
  const list = row.event_types?.length ? row.event_types : [row.event_type]
  return list as EventType[]
}

/** The part of a config one event type reads (its schema's keys). */
export function configFor(eventType: EventType, cfg: WebhookConfig): WebhookConfig {
  const keys = Object.keys(schemas[eventType].shape)
  return Object.fromEntries(Object.entries(cfg).filter(([k]) => keys.includes(k))) as WebhookConfig
}

/**
 * A config for several event types: every key must be one some listed type reads (a typo is
 * still refused), and each type's part is validated by that type's rules (so
 * address_activity still needs `addresses`). A key several types read means the same for each
 * (`addresses` is who takes part in a transfer or transaction, and the emitting contract for
 * `log`), so `{addresses}` on address_activity + log watches both. One type: parseConfig.
 */
export function parseConfigForTypes(types: readonly EventType[], raw: unknown): WebhookConfig {
  if (types.length === 1) return parseConfig(types[0] as EventType, raw)
  const obj = raw ?? {}
  if (typeof obj !== 'object' || Array.isArray(obj)) throw invalidRequest('config: must be an object')
  const known = new Set(types.flatMap((t) => Object.keys(schemas[t].shape)))
  for (const key of Object.keys(obj)) {
    if (!known.has(key))
      throw invalidRequest(`config: ${key} is not a filter of ${types.join(', ')} (unknown key)`)
  }
  const merged: WebhookConfig = {}
  for (const t of types) {
    const keys = Object.keys(schemas[t].shape)
    const part = Object.fromEntries(Object.entries(obj).filter(([k]) => keys.includes(k)))
    Object.assign(merged, parseConfig(t, part))
  }
  return merged
}

/** The match keys of every listed type, each once. */
export function matchKeysForTypes(types: readonly EventType[], cfg: WebhookConfig): MatchKey[] {
  const seen = new Set<string>()
  const out: MatchKey[] = []
  for (const t of types) {
    for (const k of matchKeys(t, configFor(t, cfg))) {
      const id = `${k.kind}:${k.key}`
      if (seen.has(id)) continue
      seen.add(id)
      out.push(k)
    }
  }
  return out
}

export interface MatchKey {
  kind: 'addr' | 'contract' | 'tx' | 'log_addr' | 'any'
  key: string
}

/**
 * The index rows that make a webhook a candidate for a block item. A webhook with no key
 * filter (e.g. every NFT transfer) is indexed under ('any', '*'). token/nft webhooks with
 * both addresses and contracts are indexed by contract and the address test runs afterwards.
 */
export function matchKeys(eventType: EventType, cfg: WebhookConfig): MatchKey[] {
  const out = (kind: MatchKey['kind'], keys: readonly string[] | undefined) =>
    (keys ?? []).map((key) => ({ kind, key }))
  switch (eventType) {
    case 'address_activity':
      return out('addr', cfg.addresses)
    case 'mined_transaction':
      return out('tx', cfg.tx_hashes)
    case 'token_transfer':
    case 'nft_transfer':
      if (cfg.contracts?.length) return out('contract', cfg.contracts)
      if (cfg.addresses?.length) return out('addr', cfg.addresses)
      return [{ kind: 'any', key: '*' }]
    case 'log':
      if (cfg.addresses?.length) return out('log_addr', cfg.addresses)
      return [{ kind: 'any', key: '*' }]
    // Every block is a candidate: a new block always fires, and internal transfers are inside
    // call traces, whose addresses the block's keys do not contain (the drafter filters).
    case 'new_block':
    case 'internal_transfer':
      return [{ kind: 'any', key: '*' }]
    // Not block-based: src/webhooks/pending.ts matches these against the mempool stream.
    case 'pending_transaction':
      return []
  }
}

/** `event_types` at create and PATCH: one or more types, each once (duplicates are dropped). */
export const eventTypesSchema = z
  .array(z.string(), { error: 'event_types: must be an array of event types' })
  .min(1, 'event_types: must list at least one event type')
  .max(MAX_EVENT_TYPES, `event_types: at most ${MAX_EVENT_TYPES} event types`)
  .transform((list, ctx) => {
    for (const t of list) {
      if (!(EVENT_TYPES as readonly string[]).includes(t)) {
        ctx.addIssue({
          code: 'custom',
          message: `event_types: must each be one of ${EVENT_TYPES.join(', ')} (got "${t.slice(0, 40)}")`,
        })
        return z.NEVER
      }
    }
    return [...new Set(list)] as EventType[]
  })

export const eventTypeSchema = z.enum(EVENT_TYPES, {
  error: (issue) =>
    `event_type: must be one of ${EVENT_TYPES.join(', ')}${typeof issue.input === 'string' ? ` (got "${issue.input.slice(0, 40)}")` : ''}`,
})

export { describeZodError }
