import type { Kysely } from 'kysely'
import nodemailer, { type Transporter } from 'nodemailer'
import type { Logger } from '../logger.ts'
import type { Database } from '../storage/schema.ts'

export interface Mail {
  to: string
  subject: string
  text: string
}

/**
 * Account notifications. Every message is written to `mail_outbox` first (durable record);
 * with SMTP_URL set it is then sent with nodemailer and marked sent, otherwise it stays in the
 * outbox and is logged (dev mode: "e-mail to the outbox"). A failed send is recorded, not thrown:
 * a mail server outage must not break webhook delivery.
 */
export class Mailer {
  private readonly transport: Transporter | undefined

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    smtpUrl: string | undefined,
    private readonly from = 'Halyard <no-reply@halyard.local>',
  ) {
    this.transport = smtpUrl ? nodemailer.createTransport(smtpUrl) : undefined
  }

  async send(mail: Mail): Promise<void> {
    const row = await this.db
      .insertInto('mail_outbox')
      .values({ to_address: mail.to, subject: mail.subject, body: mail.text })
      .returning('id')
      .executeTakeFirstOrThrow()
    if (!this.transport) {
      this.logger.info({ to: mail.to, subject: mail.subject }, 'e-mail written to the outbox (no SMTP_URL)')
      return
    }
    try {
      await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text })
      await this.db.updateTable('mail_outbox').set({ sent_at: new Date() }).where('id', '=', row.id).execute()
    } catch (err) {
      const message = (err as Error).message
      this.logger.warn({ to: mail.to, err: message }, 'e-mail send failed; kept in the outbox')
      await this.db
        .updateTable('mail_outbox')
        .set({ error: message.slice(0, 500) })
        .where('id', '=', row.id)
        .execute()
    }
  }

  close(): void {
    this.transport?.close()
  }
}
