import { type Kysely, type Migration, sql } from 'kysely'

/** Webhooks (src/webhooks/store.ts): subscriptions, match index, durable events, attempts, mail outbox. */
export const m0020_webhooks: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table webhooks (
        id text primary key,
        account_id text not null,
        notify_email text,
        url text not null,
        chain text not null,
        event_type text not null,
        config text not null,
        secret_enc text not null,
        status text not null,
        status_reason text,
        notified_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`.execute(db)
    await sql`create index webhooks_account on webhooks(account_id, created_at, id)`.execute(db)
    // The match index: (network, key) → webhook. kind says which part of a block the key is
    // compared with ('addr', 'contract', 'tx', 'log_addr', or 'any' with key '*').
    await sql`
      create table webhook_match_keys (
        network text not null,
        kind text not null,
        key text not null,
        webhook_id text not null,
        primary key (network, kind, key, webhook_id)
      )`.execute(db)
    await sql`create index webhook_match_keys_lookup on webhook_match_keys(network, key)`.execute(db)
    await sql`create index webhook_match_keys_webhook on webhook_match_keys(webhook_id)`.execute(db)
    // Durable events. seq orders events per webhook (block order, then position in block).
    // status: pending → sending → delivered | failed; cancelled when a reorg undid the block.
    await sql`
      create table webhook_events (
        seq bigserial primary key,
        id text not null unique,
        webhook_id text not null,
        network text,
        block_number bigint,
        event_type text not null,
        body text not null,
        status text not null,
        attempts integer not null default 0,
        round_attempts integer not null default 0,
        next_attempt_at timestamptz not null default now(),
        lease_until timestamptz,
        last_error text,
        created_at timestamptz not null default now(),
        delivered_at timestamptz
      )`.execute(db)
    await sql`create index webhook_events_due on webhook_events(next_attempt_at, seq) where status in ('pending', 'sending')`.execute(
      db,
    )
    await sql`create index webhook_events_queue on webhook_events(webhook_id, seq) where status in ('pending', 'sending')`.execute(
      db,
    )
    await sql`create index webhook_events_webhook on webhook_events(webhook_id, seq)`.execute(db)
    await sql`create index webhook_events_block on webhook_events(network, block_number) where status in ('pending', 'sending')`.execute(
      db,
    )
    await sql`
      create table webhook_attempts (
        id bigserial primary key,
        event_id text not null,
        webhook_id text not null,
        attempt integer not null,
        status_code integer,
        error text,
        duration_ms integer not null,
        created_at timestamptz not null default now()
      )`.execute(db)
    await sql`create index webhook_attempts_webhook on webhook_attempts(webhook_id, id)`.execute(db)
    await sql`
      create table mail_outbox (
        id bigserial primary key,
        to_address text not null,
        subject text not null,
        body text not null,
        sent_at timestamptz,
        error text,
        created_at timestamptz not null default now()
      )`.execute(db)
  },
}
