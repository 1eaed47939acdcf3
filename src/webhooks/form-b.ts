import { createHmac } from 'node:crypto'
import { z } from 'zod'

/**
 * Delivery form B: a per-webhook choice (`format: "B"`; "A" is the default).
 *  - headers: `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`,
 *    `X-Webhook-Event` (the upper-case type), `X-Webhook-Idempotency-Key` (the `evt_` id);
 *  - envelope `{id, type, createdAt, chain, chainId, data}`, createdAt ISO 8601 with ms;
 *  - `data` for TOKEN_TRANSFER exactly as 6.2; every other kind is form A's data in camelCase,
 *    without `chain` (the envelope carries it) and with `tx_hash` named `transactionHash` as
 *    in TOKEN_TRANSFER;
 *  - retries after 1 s, 5 s, 30 s, 5 min, 30 min, 2 h, 8 h, then the event is `failed` and
 *    the webhook stays active (form A's pause is not part of 6.2).
 */
export const FORMATS = ['A', 'B'] as const
export type DeliveryFormat = (typeof FORMATS)[number]

export const formatSchema = z.enum(FORMATS, {
  error: 'format: must be "A" (timestamped signature, the default) or "B" (Alchemy/QuickNode-style delivery)',
})

export const FORM_B_SCHEDULE_MS = [1_000, 5_000, 30_000, 300_000, 1_800_000, 7_200_000, 28_800_000]

/** Upper-case type names (form B's `type` and X-Webhook-Event): the event_type upper-cased. */
export const upperType = (eventType: string) => eventType.toUpperCase()

/** Form B signature: `sha256=` + lowercase hex HMAC-SHA256 of the raw payload, keyed with the secret. */
export function signFormB(secret: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`
}

export function formBHeaders(secret: string, eventType: string, eventId: string, rawBody: string) {
  return {
    'content-type': 'application/json',
    'user-agent': 'Halyard-Webhooks/1',
    'x-service-signature': signFormB(secret, rawBody),
    'x-webhook-event': upperType(eventType),
    'x-webhook-idempotency-key': eventId,
  }
}

const RENAMED: Record<string, string> = { tx_hash: 'transactionHash' }
const camel = (key: string) => RENAMED[key] ?? key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

/** Form A `data` → form B `data`: camelCase keys (one level; values are kept), `chain` dropped. */
export function camelData(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) if (k !== 'chain') out[camel(k)] = v
  return out
}

/** Raw base units as a decimal string with `decimals` places, trailing zeros dropped ("1.5"). */
export function formatUnits(value: bigint, decimals: number): string {
  const neg = value < 0n
  const digits = (neg ? -value : value).toString().padStart(decimals + 1, '0')
  const whole = digits.slice(0, digits.length - decimals)
  const frac = digits.slice(digits.length - decimals).replace(/0+$/, '')
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`
}

export interface EnvelopeB {
  id: string
  type: string
  createdAt: string
  chain: string
  chainId: number
  data: Record<string, unknown>
  test?: true
}

export function envelopeB(
  id: string,
  eventType: string,
  createdAt: string,
  chain: string,
  chainId: number,
  data: Record<string, unknown>,
): EnvelopeB {
  return { id, type: upperType(eventType), createdAt, chain, chainId, data }
}
