import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Webhooks, second step (src/mail/outbox.ts, src/webhooks/store.ts):
 *  - the mail outbox becomes a queue: a sender claims due unsent rows (FOR UPDATE SKIP LOCKED)
 *    and retries a failed send with backoff. `next_attempt_at` is both the retry time and,
 *    while a send is under way, the end of the sender's lease;
 *  - webhook_events_due goes: no query reads it (claims find each webhook's head through
 *    webhook_events_queue), and every event insert and status change paid for its upkeep.
 */
export const m0021_webhooks_outbox: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      alter table mail_outbox
        add column attempts integer not null default 0,
        add column next_attempt_at timestamptz not null default now()`.execute(db)
    await sql`create index mail_outbox_due on mail_outbox(next_attempt_at, id) where sent_at is null`.execute(
      db,
    )
    await sql`drop index if exists webhook_events_due`.execute(db)
  },
}
