import http from 'node:http'
import https from 'node:https'
import type { Logger } from '../logger.ts'
import type { CidrAllowlist } from '../net/address-policy.ts'
import { safeFetch } from '../net/safe-fetch.ts'
import { decryptSecret, sign } from './crypto.ts'
import type { ClaimedEvent, WebhookStore } from './store.ts'

/**
 * The delivery worker (spec 6.1 form A). Every instance may run one: events are claimed from
 * PostgreSQL with FOR UPDATE SKIP LOCKED (store.claim) — only each webhook's oldest undelivered
 * event, so per webhook events go out in block order, one at a time — and leased, so a crash
 * mid-send makes the event claimable again after the lease (at-least-once; the event id never
 * changes). Concurrency is bounded globally and per receiver host, and a host at its cap is
 * left out of the next claim, so a slow receiver never holds up other webhooks.
 */

export interface DeliveryOptions {
  /** Receiver timeout (spec 8: 15 s). */
  timeoutMs: number
  /** Delays before retry 1..n (spec: 10 s, 1 min, 10 min, 1 h, 6 h). After the last retry fails the webhook is paused. */
  scheduleMs: number[]
  concurrency: number
  perHostCap: number
  pollMs: number
  /** Response bytes read (and kept in the attempt log) at most. */
  maxResponseBytes: number
  allowLoopback: boolean
  allowlist?: CidrAllowlist
  protocols: readonly string[]
  /** Extra CA certificates to trust (HALYARD_WEBHOOK_CA_FILE): internal PKI receivers, tests. */
  ca?: string
}

export const DEFAULT_SCHEDULE_MS = [10_000, 60_000, 600_000, 3_600_000, 21_600_000]

export type PauseHandler = (webhookId: string, accountId: string, lastError: string) => Promise<void>

export class DeliveryWorker {
  private inflight = 0
  private readonly perHost = new Map<string, number>()
  private readonly webhookHost = new Map<string, string>()
  private readonly secrets = new Map<string, string>()
  private stopping = false
  private loop: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private readonly active = new Set<Promise<void>>()
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 256 })
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 256 })

  constructor(
    private readonly store: WebhookStore,
    private readonly secretKey: Buffer,
    private readonly opts: DeliveryOptions,
    private readonly onPause: PauseHandler,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.loop) return
    this.loop = this.run()
  }

  /** Nudges the claim loop (new events, a freed slot). */
  wake(): void {
    this.wakeUp?.()
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.wake()
    await this.loop
    await Promise.allSettled([...this.active])
    this.httpAgent.destroy()
    this.httpsAgent.destroy()
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopping) {
      let claimed = 0
      const free = this.opts.concurrency - this.inflight
      if (free > 0) {
        try {
          const events = await this.store.claim(free, this.leaseMs(), this.saturatedWebhooks())
          failures = 0
          claimed = events.length
          for (const ev of events) this.launch(ev)
        } catch (err) {
          if (this.stopping) break
          failures++
          this.logger.warn({ err: (err as Error).message }, 'webhook claim failed')
        }
      }
      if (claimed > 0 && this.inflight < this.opts.concurrency) continue
      await this.sleep(failures > 0 ? Math.min(5000, this.opts.pollMs * 2 ** failures) : this.opts.pollMs)
    }
  }

  private leaseMs(): number {
    // Long enough for the send plus recording it; a crashed worker's events come back after this.
    return this.opts.timeoutMs + 30_000
  }

  private saturatedWebhooks(): string[] {
    const out: string[] = []
    for (const [webhook, host] of this.webhookHost) {
      if ((this.perHost.get(host) ?? 0) >= this.opts.perHostCap) out.push(webhook)
    }
    return out
  }

  private launch(ev: ClaimedEvent): void {
    this.inflight++
    let host = ''
    try {
      host = new URL(ev.url).host
    } catch {}
    this.webhookHost.set(ev.webhook_id, host)
    this.perHost.set(host, (this.perHost.get(host) ?? 0) + 1)
    const p = this.deliver(ev)
      .catch((err) => this.logger.error({ err: (err as Error).message, event: ev.id }, 'webhook delivery bookkeeping failed'))
      .finally(() => {
        this.inflight--
        const left = (this.perHost.get(host) ?? 1) - 1
        if (left <= 0) this.perHost.delete(host)
        else this.perHost.set(host, left)
        if (this.webhookHost.size > 100_000) this.webhookHost.clear()
        this.active.delete(p)
        this.wake()
      })
    this.active.add(p)
  }

  private secretFor(ev: ClaimedEvent): string {
    const key = `${ev.webhook_id}:${ev.secret_enc}`
    let s = this.secrets.get(key)
    if (s === undefined) {
      s = decryptSecret(ev.secret_enc, this.secretKey)
      if (this.secrets.size > 100_000) this.secrets.clear()
      this.secrets.set(key, s)
    }
    return s
  }

  private async deliver(ev: ClaimedEvent): Promise<void> {
    const timestamp = Math.floor(Date.now() / 1000)
    const signature = sign(this.secretFor(ev), timestamp, ev.body)
    const isHttps = ev.url.startsWith('https:')
    const res = await safeFetch(ev.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Halyard-Webhooks/1',
        'x-service-signature': signature,
        'x-service-timestamp': String(timestamp),
      },
      body: ev.body,
      timeoutMs: this.opts.timeoutMs,
      maxBytes: this.opts.maxResponseBytes,
      oversize: 'truncate',
      allowLoopback: this.opts.allowLoopback,
      allowlist: this.opts.allowlist,
      protocols: this.opts.protocols,
      ca: this.opts.ca,
      agent: isHttps ? this.httpsAgent : this.httpAgent,
    })
    const ok = res.ok && res.status >= 200 && res.status < 300
    const statusCode = res.ok ? res.status : (res.status ?? null)
    const error = res.ok ? null : `${res.kind}: ${res.message}`
    const durationMs = res.durationMs
    if (ok) {
      await this.store.recordAttempt(ev, { statusCode, error, durationMs }, { status: 'delivered' })
      return
    }
    const failedRetries = ev.round_attempts // attempts before this one, minus the first
    if (failedRetries < this.opts.scheduleMs.length) {
      const delay = this.opts.scheduleMs[failedRetries] as number
      await this.store.recordAttempt(ev, { statusCode, error, durationMs }, { status: 'pending', retryAt: new Date(Date.now() + delay) })
      return
    }
    // The first attempt and every scheduled retry failed: the event is failed, the webhook paused.
    await this.store.recordAttempt(ev, { statusCode, error, durationMs }, { status: 'failed' })
    await this.onPause(ev.webhook_id, ev.account_id, error ?? `HTTP ${statusCode}`)
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve()
    return new Promise((resolve) => {
      const t = setTimeout(done, ms)
      const self = this
      function done() {
        clearTimeout(t)
        if (self.wakeUp === done) self.wakeUp = undefined
        resolve()
      }
      this.wakeUp = done
    })
  }
}
