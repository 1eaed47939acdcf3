import type { Kysely } from 'kysely'
import nodemailer, { type Transporter } from 'nodemailer'
import { BackgroundLoop } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { Database } from '../storage/schema.ts'
import { claimMail, type Mail, markMailFailed, markMailSent } from './outbox.ts'

export type { Mail } from './outbox.ts'

export interface MailerOptions {
  /** How often the sender looks for due rows when nothing woke it. */
  pollMs: number
  /** How long a claimed row stays with its sender (well above the SMTP timeouts below). */
  leaseMs: number
  /** Delay before retry n (n = attempts made so far, from 1). */
  backoffMs: (attempts: number) => number
  batch: number
}

export const DEFAULT_MAILER_OPTIONS: MailerOptions = {
  pollMs: 2_000,
  leaseMs: 120_000,
  // 1 s, 2 s, 4 s, … capped at 10 min: an SMTP outage of any length is ridden out.
  backoffMs: (n) => Math.min(600_000, 1000 * 2 ** Math.max(0, n - 1)),
  batch: 20,
}

export interface MailerDeps {
  db: Kysely<Database>
  logger: Logger
  /** SMTP_URL; without it nothing is sent (messages stay in the outbox). */
  smtpUrl: string | undefined
  /** DEFAULT_MAILER_OPTIONS when absent. */
  opts?: MailerOptions
  /** The sender address; Halyard's no-reply address when absent. */
  from?: string
}

/**
 * Account notifications (the webhook pause e-mail). Messages are written to `mail_outbox` in
 * the transaction of the state change they report (enqueueMail in outbox.ts), so a crash can neither
 * lose one nor send one for a change that did not commit. This sender drains the outbox: it
 * claims due rows (SKIP LOCKED, leased, so several instances never send the same row at the
 * same time), sends them with nodemailer over SMTP_URL, marks them sent, and retries failures
 * with backoff. A mail server outage never blocks webhook delivery. Without SMTP_URL nothing is
 * sent: messages stay in the outbox and are logged (dev mode).
 */
export class Mailer {
  private readonly transport: Transporter | undefined
  private readonly loop: BackgroundLoop

  private readonly db: Kysely<Database>
  private readonly logger: Logger
  private readonly opts: MailerOptions
  private readonly from: string

  constructor(deps: MailerDeps) {
    const { smtpUrl } = deps
    this.db = deps.db
    this.logger = deps.logger
    this.opts = deps.opts ?? DEFAULT_MAILER_OPTIONS
    this.from = deps.from ?? 'Halyard <no-reply@halyard.local>'
    this.transport = smtpUrl
      ? nodemailer.createTransport({
          url: smtpUrl,
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000,
        })
      : undefined
    this.loop = new BackgroundLoop({
      failure: 'mail outbox claim failed',
      logger: this.logger,
      round: async () => ((await this.drain()) >= this.opts.batch ? 0 : this.opts.pollMs),
      retryMs: (failures) => Math.min(30_000, this.opts.pollMs * 2 ** failures),
    })
  }

  /** Starts draining the outbox (rows left by a crash or an outage go out now). */
  start(): void {
    if (!this.transport || this.loop.active) return
    this.loop.start()
  }

  /** A message was committed to the outbox: send it now (or, without SMTP, log it). */
  queued(mail: Mail): void {
    if (!this.transport) {
      this.logger.info({ to: mail.to, subject: mail.subject }, 'e-mail written to the outbox (no SMTP_URL)')
      return
    }
    this.loop.wake()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
    this.transport?.close()
  }

  /** One claim and its sends; returns how many rows were claimed. */
  private async drain(): Promise<number> {
    const transport = this.transport
    if (!transport) return 0
    const rows = await claimMail(this.db, this.opts.batch, this.opts.leaseMs)
    for (const row of rows) {
      if (this.loop.stopSignal.aborted) break // unsent claimed rows come back when their lease ends
      try {
        await transport.sendMail({
          from: this.from,
          to: row.to_address,
          subject: row.subject,
          text: row.body,
        })
      } catch (err) {
        const message = (err as Error).message
        const retryAt = new Date(Date.now() + this.opts.backoffMs(row.attempts))
        this.logger.warn(
          { to: row.to_address, err: message, attempts: row.attempts, retryAt },
          'e-mail send failed; kept in the outbox for a retry',
        )
        await markMailFailed(this.db, row.id, message, retryAt)
        continue
      }
      await markMailSent(this.db, row.id)
    }
    return rows.length
  }
}
