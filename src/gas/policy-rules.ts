import { type Hex, parseAbiItem, toFunctionSelector } from 'viem'
import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { invalidRequest } from '../errors.ts'
import { type Address, isAddress, toLowerAddress } from '../types.ts'
import { compareDecimal, isDecimal, normalizeDecimal } from './policy-decimal.ts'

/**
 * A policy's `rules` (Halyard's base keys plus what Alchemy's and Pimlico's gas managers offer).
 * Validated once, on create and update; stored normalised (addresses lowercase, decimals
 * canonical, times ISO 8601). Unknown keys, wrong types and impossible values are a 400 naming
 * the key.
 */

const usd = z
  .string({ error: 'must be a decimal string such as "0.50"' })
  .refine(isDecimal, 'must be a decimal string such as "0.50"')
  .transform(normalizeDecimal)
  .refine((v) => v !== '0', 'must be greater than 0')

const count = z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1')

const address = z
  .string({ error: 'must be a 0x-prefixed 20-byte hex address' })
  .refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')
  .transform((a) => toLowerAddress(a))

const addresses = z
  .array(address, { error: 'must be an array of addresses' })
  .min(1, 'must list at least one address')
  .max(1000, 'may list at most 1000 addresses')
  .transform((a) => [...new Set(a)])

/** `0x12345678` or a function signature such as `transfer(address,uint256)`. */
const method = z
  .string({
    error: 'must be a 4-byte selector (0x12345678) or a signature such as transfer(address,uint256)',
  })
  .refine(
    (m) => selectorOf(m) !== null,
    'must be a 4-byte selector (0x12345678) or a signature such as transfer(address,uint256)',
  )

const time = z
  .union(
    [
      z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp or Unix seconds' }),
      z.number().int('must be whole Unix seconds').min(0, 'must not be negative'),
    ],
    { error: 'must be an ISO 8601 timestamp or Unix seconds' },
  )
  .transform((t) => new Date(typeof t === 'number' ? t * 1000 : t).toISOString())

export const MIN_EXPIRY_SECONDS = 30
export const MAX_EXPIRY_SECONDS = 86_400
export const DEFAULT_EXPIRY_SECONDS = 600

export const rulesSchema = z
  .object(
    {
      max_gas_usd: usd
        .meta({ description: 'The most one operation may cost, in USD', example: '0.50' })
        .optional(),
      max_per_user_per_day: count
        .meta({ description: 'Operations one sender may have sponsored per UTC day', example: 5 })
        .optional(),
      allowed_contracts: addresses
        .meta({
          description: 'Only calls to these contracts',
          example: ['0x5fbdb2315678afecb367f032d93f642f64180aa3'],
        })
        .optional(),
      allowed_methods: z
        .array(method, { error: 'must be an array of selectors or signatures' })
        .min(1, 'must list at least one method')
        .max(1000, 'may list at most 1000 methods')
        .meta({
          description: 'Only calls to these functions: 4-byte selectors or signatures',
          example: ['transfer(address,uint256)', '0xa9059cbb'],
        })
        .optional(),
      rate_limit: z
        .object(
          {
            limit: count.meta({ description: 'Operations per window', example: 10 }),
            window_seconds: count
              .max(MAX_EXPIRY_SECONDS * 31, `must be at most ${MAX_EXPIRY_SECONDS * 31}`)
              .meta({ description: 'The window, in seconds', example: 3600 }),
          },
          {
            error: (iss) =>
              iss.code === 'invalid_type' ? 'must be an object { limit, window_seconds }' : undefined,
          },
        )
        .strict()
        .describe('Operations per sender per sliding window')
        .optional(),
      max_spend_usd: usd
        .meta({ description: 'The most the policy may spend in all, in USD', example: '100' })
        .optional(),
      max_spend_per_sender_usd: usd
        .meta({ description: 'The most it may spend on one sender, in USD', example: '5' })
        .optional(),
      max_operations: count
        .meta({ description: 'The most operations it may sponsor in all', example: 1000 })
        .optional(),
      sender_allowlist: addresses
        .meta({
          description: 'Only these senders (smart accounts)',
          example: ['0x5fbdb2315678afecb367f032d93f642f64180aa3'],
        })
        .optional(),
      sender_blocklist: addresses
        .meta({ description: 'Never these senders', example: ['0x70997970c51812dc3a010c7d01b50e0d17dc79c8'] })
        .optional(),
      start_time: time
        .meta({
          description: 'Sponsors from this time (ISO 8601 or Unix seconds)',
          example: '2026-01-01T00:00:00Z',
        })
        .optional(),
      end_time: time
        .meta({
          description: 'Sponsors until this time (ISO 8601 or Unix seconds)',
          example: '2026-12-31T23:59:59Z',
        })
        .optional(),
      sponsorship_expiry_seconds: z
        .number({ error: 'must be an integer' })
        .int('must be an integer')
        .min(
          MIN_EXPIRY_SECONDS,
          `must be at least ${MIN_EXPIRY_SECONDS} (bundlers refuse ops expiring sooner)`,
        )
        .max(MAX_EXPIRY_SECONDS, `must be at most ${MAX_EXPIRY_SECONDS}`)
        .meta({
          description: `How long a sponsorship signature stays valid, in seconds (${DEFAULT_EXPIRY_SECONDS} when absent)`,
          example: DEFAULT_EXPIRY_SECONDS,
        })
        .optional(),
    },
    { error: (iss) => (iss.code === 'invalid_type' ? 'must be an object' : undefined) },
  )
  .strict()
  .superRefine((r, ctx) => {
    if (r.start_time && r.end_time && r.end_time <= r.start_time)
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'must be later than start_time' })
    const blocked = new Set(r.sender_blocklist ?? [])
    const both = (r.sender_allowlist ?? []).filter((a) => blocked.has(a))
    if (both.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['sender_blocklist'],
        message: `lists ${both[0]}, which sender_allowlist allows`,
      })
  })

export type PolicyRules = z.infer<typeof rulesSchema>

/** Rules from a request body; invalid_request naming the key (`rules.max_gas_usd: …`). */
export function parseRules(raw: unknown, root = 'rules'): PolicyRules {
  const r = rulesSchema.safeParse(raw)
  if (!r.success) throw invalidRequest(describeZodError(r.error, root))
  return r.data
}

export function selectorOf(m: string): Hex | null {
  if (/^0x[0-9a-fA-F]{8}$/.test(m)) return `0x${m.slice(2).toLowerCase()}`
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*\(.*\)$/.test(m)) return null
  try {
    const item = parseAbiItem(`function ${m}`)
    return item.type === 'function' ? `0x${toFunctionSelector(item).slice(2).toLowerCase()}` : null
  } catch {
    return null
  }
}

/** Rules with their lookups built (selectors hashed once per rules object). */
export interface CompiledRules {
  rules: PolicyRules
  contracts: Set<Address> | null
  methods: Set<Hex> | null
  allow: Set<Address> | null
  block: Set<Address> | null
  startMs: number | null
  endMs: number | null
  expirySeconds: number
}

const compiled = new Map<string, CompiledRules>()

/** Memoised by the rules' JSON: the hot path sees the same few policies over and over. */
export function compileRules(rules: PolicyRules): CompiledRules {
  const key = JSON.stringify(rules)
  const hit = compiled.get(key)
  if (hit) return hit
  const set = <T>(v: readonly T[] | undefined) => (v ? new Set(v) : null)
  const out: CompiledRules = {
    rules,
    contracts: set(rules.allowed_contracts),
    methods: rules.allowed_methods ? new Set(rules.allowed_methods.map((m) => selectorOf(m) as Hex)) : null,
    allow: set(rules.sender_allowlist),
    block: set(rules.sender_blocklist),
    startMs: rules.start_time ? Date.parse(rules.start_time) : null,
    endMs: rules.end_time ? Date.parse(rules.end_time) : null,
    expirySeconds: rules.sponsorship_expiry_seconds ?? DEFAULT_EXPIRY_SECONDS,
  }
  if (compiled.size >= 1000) compiled.clear()
  compiled.set(key, out)
  return out
}

export const USD_RULES = ['max_gas_usd', 'max_spend_usd', 'max_spend_per_sender_usd'] as const

/** Whether the rules need the native currency's USD price. */
export const needsPrice = (r: PolicyRules) => USD_RULES.some((k) => r[k] !== undefined)

export function lessOrEqual(a: string, b: string): boolean {
  return compareDecimal(a, b) <= 0
}
