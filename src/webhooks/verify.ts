import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Receiver-side check for Halyard webhooks (form A). Copy this file into a receiver or import
 * it: it depends on node:crypto only.
 *
 *   const ok = verifyWebhook(rawBody, req.headers, process.env.WEBHOOK_SECRET, { toleranceSeconds: 300 })
 *
 * `rawBody` must be the exact bytes received (not re-serialised JSON). Returns a result rather
 * than throwing so a receiver can log why a delivery was refused.
 */
export type VerifyResult = { ok: true } | { ok: false; reason: string }

type HeaderBag = Headers | Record<string, string | string[] | undefined>

export function verifyWebhook(
  rawBody: string | Buffer | Uint8Array,
  headers: HeaderBag,
  secret: string,
  opts: { toleranceSeconds?: number; now?: number } = {},
): VerifyResult {
  const tolerance = opts.toleranceSeconds ?? 300
  const signature = header(headers, 'x-service-signature')
  const timestampText = header(headers, 'x-service-timestamp')
  if (!signature) return { ok: false, reason: 'missing X-Service-Signature header' }
  if (!timestampText || !/^\d{1,12}$/.test(timestampText)) {
    return { ok: false, reason: 'missing or malformed X-Service-Timestamp header' }
  }
  const timestamp = Number(timestampText)
  const now = Math.floor((opts.now ?? Date.now()) / 1000)
  if (Math.abs(now - timestamp) > tolerance) {
    return { ok: false, reason: `timestamp is more than ${tolerance} seconds from now` }
  }
  if (!/^[0-9a-f]{64}$/.test(signature))
    return { ok: false, reason: 'signature is not 64 lowercase hex digits' }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody)
  // The digest covers the header text exactly as sent (spec: `{timestamp}.{raw body}`).
  const expected = createHmac('sha256', secret).update(`${timestampText}.`).update(body).digest()
  if (!timingSafeEqual(expected, Buffer.from(signature, 'hex')))
    return { ok: false, reason: 'signature mismatch' }
  return { ok: true }
}

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const bag = headers as Record<string, string | string[] | undefined>
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name)
  const v = key === undefined ? undefined : bag[key]
  return Array.isArray(v) ? v[0] : v
}
