import { SafeHttpClient } from '../net/safe-client.ts'
import { safeFetch } from '../net/safe-fetch.ts'
import { decryptSecret, sign } from './crypto.ts'
import type { DeliveryOptions } from './delivery-options.ts'
import { FORM_B_SCHEDULE_MS, formBHeaders } from './form-b.ts'
import { withNftMetadata } from './nft-metadata.ts'
import type { AttemptOutcome, ClaimedEvent } from './store.ts'

export const UNDECRYPTABLE =
  'the signing secret does not decrypt with this HALYARD_SECRET_KEY (the key changed?); nothing was sent, and delivery resumes once an operator restores the key'

/**
 * One delivery attempt (form A: sign `{timestamp}.{body}`; form B: form-b.ts), POST it through the
 * SSRF-guarded safeFetch with the worker's keep-alive pools, and say where the event goes
 * next — delivered on a 2xx, else the next retry of the schedule, or failed after the last.
 */
export class WebhookSender {
  // Pools sized by the concurrency setting: a lane waiting in a pool's queue for a connection
  // would burn its timeout without having sent anything.
  private readonly client: SafeHttpClient
  /** Decrypted signing secrets by webhook, with the ciphertext they came from. */
  private readonly secrets = new Map<string, { enc: string; secret: string }>()

  constructor(
    private readonly secretKey: Buffer,
    private readonly opts: DeliveryOptions,
  ) {
    this.client = new SafeHttpClient({ connectionsPerOrigin: Math.max(1, opts.concurrency) })
  }

  close(): Promise<void> {
    return this.client.close()
  }

  async deliver(ev: ClaimedEvent): Promise<AttemptOutcome> {
    const timestamp = Math.floor(Date.now() / 1000)
    const secret = this.secretFor(ev)
    if (secret === undefined) {
      this.opts.onUndecryptable?.()
      // Backoff along the schedule by all attempts so far, then at its longest delay, until an
      // operator restores the key; the webhook is not paused for it (see operatorFault).
      const delays = this.opts.scheduleMs
      const delay = delays[Math.min(ev.attempts, delays.length - 1)] ?? 60_000
      return {
        ev,
        statusCode: null,
        error: `secret: ${UNDECRYPTABLE}`,
        durationMs: 0,
        next: 'pending',
        retryAt: new Date(Date.now() + delay),
        operatorFault: true,
      }
    }
    const formB = ev.format === 'B'
    // Signed as sent: the metadata is part of the signed body.
    const body =
      formB && ev.event_type === 'nft_transfer' && this.opts.nftMetadata
        ? await withNftMetadata(this.opts.nftMetadata, ev.body)
        : ev.body
    const res = await safeFetch(ev.url, {
      method: 'POST',
      headers: formB
        ? formBHeaders(secret, ev.event_type, ev.id, body)
        : {
            'content-type': 'application/json',
            'user-agent': 'Halyard-Webhooks/1',
            'x-service-signature': sign(secret, timestamp, body),
            'x-service-timestamp': String(timestamp),
          },
      body,
      timeoutMs: this.opts.timeoutMs,
      maxBytes: this.opts.maxResponseBytes,
      oversize: 'truncate',
      allowLoopback: this.opts.allowLoopback,
      allowlist: this.opts.allowlist,
      resolve: this.opts.resolve,
      protocols: this.opts.protocols,
      ca: this.opts.ca,
      client: this.client,
    })
    const statusCode = res.ok ? res.status : (res.status ?? null)
    const error = res.ok ? null : `${res.kind}: ${res.message}`
    const responseBody = res.ok ? snippet(res.body) : null
    const base = { ev, statusCode, error, durationMs: res.durationMs, responseBody }
    if (res.ok && res.status >= 200 && res.status < 300) return { ...base, next: 'delivered' }
    // The URL itself stopped passing the safety checks (DNS now answers a refused address, or
    // its scheme is no longer allowed): nothing was sent; the webhook is disabled (delivery.ts).
    if (!res.ok && (res.kind === 'blocked_address' || res.kind === 'invalid_url'))
      return { ...base, next: 'pending', retryAt: new Date(), disable: `${res.kind}: ${res.message}` }
    // round_attempts = attempts made before this one since the last (re)queue; the first is not a retry.
    const retry = ev.round_attempts
    const delay = (formB ? (this.opts.scheduleBMs ?? FORM_B_SCHEDULE_MS) : this.opts.scheduleMs)[retry]
    if (delay !== undefined) return { ...base, next: 'pending', retryAt: new Date(Date.now() + delay) }
    // The first attempt and every scheduled retry failed: the event is failed (form A also
    // pauses the webhook; form B does not, see delivery.ts afterRecorded).
    return { ...base, next: 'failed' }
  }

  /** The signing secret, or undefined when it does not decrypt under this process's key. */
  private secretFor(ev: ClaimedEvent): string | undefined {
    // By webhook, checked against the stored ciphertext (a rotated secret is a new one).
    const cached = this.secrets.get(ev.webhook_id)
    if (cached !== undefined && cached.enc === ev.secret_enc) return cached.secret
    let secret: string
    try {
      secret = decryptSecret(ev.secret_enc, this.secretKey)
    } catch {
      return undefined
    }
    if (this.secrets.size > 100_000) this.secrets.clear()
    this.secrets.set(ev.webhook_id, { enc: ev.secret_enc, secret })
    return secret
  }
}

/** How much of a receiver's answer an attempt keeps: enough to read an error message. */
export const RESPONSE_SNIPPET_BYTES = 512

/** The first bytes of an answer as text (a multi-byte character cut in two becomes U+FFFD). */
function snippet(body: Buffer): string | null {
  if (body.length === 0) return null
  const text = body.subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8')
  return body.length > RESPONSE_SNIPPET_BYTES ? `${text}…` : text
}
