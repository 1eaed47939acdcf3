import { type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'

/** An account notification. */
export interface Mail {
  to: string
  subject: string
  text: string
}

/** An outbox row claimed by a sender: leased until `next_attempt_at`. */
export interface OutboxRow {
  id: string
  to_address: string
  subject: string
  body: string
  attempts: number
}

type Db = Kysely<Database>

/* The durable mail outbox (mail_outbox). A message is written in the caller's transaction
 * (the one that pauses a webhook), so the notice exists exactly when the state change does;
 * senders then claim due rows, send and mark them. */

/** Writes a message inside `trx` (the caller's transaction); it is sent after that commits. */
export async function enqueueMail(trx: Db, mail: Mail): Promise<void> {
  await trx
    .insertInto('mail_outbox')
    .values({ to_address: mail.to, subject: mail.subject, body: mail.text })
    .execute()
}

/**
 * Claims up to `limit` unsent rows that are due. FOR UPDATE SKIP LOCKED: concurrent senders
 * (other instances) take different rows; the claim pushes `next_attempt_at` past the lease,
 * so a row stays with its sender while it sends and comes back only if that sender died.
 */
export async function claimMail(db: Db, limit: number, leaseMs: number): Promise<OutboxRow[]> {
  const result = await sql<OutboxRow>`
    update mail_outbox m
    set attempts = m.attempts + 1,
        next_attempt_at = now() + ${`${leaseMs} milliseconds`}::interval
    from (
      select id from mail_outbox
      where sent_at is null and next_attempt_at <= now()
      order by next_attempt_at, id
      limit ${limit}
      for update skip locked
    ) due
    where m.id = due.id
    returning m.id, m.to_address, m.subject, m.body, m.attempts`.execute(db)
  return result.rows
}

export async function markMailSent(db: Db, id: string): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({ sent_at: new Date(), error: null })
    .where('id', '=', id)
    .where('sent_at', 'is', null)
    .execute()
}

export async function markMailFailed(db: Db, id: string, error: string, retryAt: Date): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({ error: error.slice(0, 500), next_attempt_at: retryAt })
    .where('id', '=', id)
    .where('sent_at', 'is', null)
    .execute()
}
