import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Receiver-side check of a Halyard webhook delivery, both forms, from the raw body and the
 * headers. Published as `halyard/webhooks` (built to dist/ by `npm run build:webhooks`, which
 * `npm pack` runs); it depends on node:crypto only. Usage and the same check in Python and Go:
 * docs/webhooks-verify.md.
 *
 *   import { verifyWebhook } from 'halyard/webhooks'
 *   const check = verifyWebhook(rawBody, req.headers, process.env.WEBHOOK_SECRET)
 *   if (!check.ok) return res.writeHead(400).end(check.reason)
 *
 * - Form A: `X-Service-Signature: <hex HMAC-SHA256(secret, "{timestamp}.{raw body}")>` with
 *   `X-Service-Timestamp: <unix seconds>`; refused when the timestamp is more than
 *   `toleranceSeconds` (300) from now. Every attempt is signed anew, so retries pass.
 * - Form B: `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`; the timestamp is
 *   the signed body's `createdAt`, the same on every retry: refused when it is older than
 *   `maxAgeSeconds` (86 400: form B's retries span about 10.6 hours) or more than
 *   `toleranceSeconds` in the future.
 *
 * `rawBody` must be the exact bytes received, not re-serialised JSON. Returns a result rather
 * than throwing, so a receiver can log why it refused a delivery; dedupe on the event id.
 */
export type VerifyResult = { ok: true; form: 'A' | 'B' } | { ok: false; reason: string }

export type HeaderBag = Headers | Record<string, string | string[] | undefined>

export interface VerifyOptions {
  /** Form A: the largest distance of the timestamp from now; form B: of createdAt into the future. Default 300. */
  toleranceSeconds?: number
  /** Form B: the oldest createdAt accepted, in seconds before now. Default 86 400 (a day). */
  maxAgeSeconds?: number
  /** The current time in milliseconds (tests); default Date.now(). */
  now?: number
}

export function verifyWebhook(
  rawBody: string | Buffer | Uint8Array,
  headers: HeaderBag,
  secret: string,
  opts: VerifyOptions = {},
): VerifyResult {
  const signature = header(headers, 'x-service-signature')
  if (!signature) return { ok: false, reason: 'missing X-Service-Signature header' }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody)
  const now = opts.now ?? Date.now()
  const tolerance = opts.toleranceSeconds ?? 300
  return signature.startsWith('sha256=')
    ? verifyFormB(
        body,
        signature.slice('sha256='.length),
        secret,
        now,
        tolerance,
        opts.maxAgeSeconds ?? 86_400,
      )
    : verifyFormA(body, signature, header(headers, 'x-service-timestamp'), secret, now, tolerance)
}

function verifyFormA(
  body: Buffer,
  signature: string,
  timestampText: string | undefined,
  secret: string,
  nowMs: number,
  tolerance: number,
): VerifyResult {
  if (!timestampText || !/^\d{1,12}$/.test(timestampText)) {
    return { ok: false, reason: 'missing or malformed X-Service-Timestamp header' }
  }
  const now = Math.floor(nowMs / 1000)
  if (Math.abs(now - Number(timestampText)) > tolerance) {
    return { ok: false, reason: `timestamp is more than ${tolerance} seconds from now` }
  }
  // The digest covers the header text exactly as sent: `{timestamp}.{raw body}`.
  const expected = createHmac('sha256', secret).update(`${timestampText}.`).update(body).digest()
  return sameDigest(expected, signature)
    ? { ok: true, form: 'A' }
    : { ok: false, reason: 'signature mismatch' }
}

function verifyFormB(
  body: Buffer,
  signature: string,
  secret: string,
  nowMs: number,
  tolerance: number,
  maxAge: number,
): VerifyResult {
  const expected = createHmac('sha256', secret).update(body).digest()
  if (!sameDigest(expected, signature)) return { ok: false, reason: 'signature mismatch' }
  // Read only once the signature holds: createdAt is then Halyard's.
  let createdAt: unknown
  try {
    createdAt = (JSON.parse(body.toString('utf8')) as { createdAt?: unknown }).createdAt
  } catch {
    return { ok: false, reason: 'body is not JSON' }
  }
  const at = typeof createdAt === 'string' ? Date.parse(createdAt) : Number.NaN
  if (Number.isNaN(at)) return { ok: false, reason: 'missing or malformed createdAt' }
  if (nowMs - at > maxAge * 1000) return { ok: false, reason: `createdAt is more than ${maxAge} seconds ago` }
  if (at - nowMs > tolerance * 1000)
    return { ok: false, reason: `createdAt is more than ${tolerance} seconds in the future` }
  return { ok: true, form: 'B' }
}

/** Constant-time comparison with a lowercase hex signature. */
function sameDigest(expected: Buffer, signature: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(signature)) return false
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'))
}

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const bag = headers as Record<string, string | string[] | undefined>
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name)
  const v = key === undefined ? undefined : bag[key]
  return Array.isArray(v) ? v[0] : v
}
