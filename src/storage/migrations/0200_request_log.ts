import { type Kysely, type Migration, sql } from 'kysely'

/**
 * The request explorer's record (src/requests): one row per JSON-RPC call (each item of a batch)
 * that a gateway process kept, written in batches by every process, so every instance's
 * requests appear. Pruned by time (HALYARD_REQUEST_LOG_RETENTION, default 24 h) in bounded
 * deletes on the `at` index, not partitioned: one table behaves alike on PGlite and PostgreSQL,
 * and a day of kept calls (bounded per account and flush) stays small enough for deletes. Two
 * indexes only: each one more is paid on every kept row's insert (a request id is looked up
 * within its account's rows).
 *
 * Per-key counts per UTC day and method (calls, compute units, errors, 429s): every call
 * counted, kept or not, added by upserts like usage_daily.
 */
export const m0200_request_log: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table request_log (
        account_id text not null,
        at timestamptz not null,
        key_id text not null,
        surface text not null,
        network text not null,
        request_id text not null,
        item integer not null,
        batch_size integer not null,
        method text not null,
        http_status smallint not null,
        rpc_code integer null,
        error text null,
        latency_us integer not null,
        compute_units integer not null,
        origin text null,
        params text null,
        answer text null
      )`.execute(db)
    await sql`create index request_log_account_at on request_log (account_id, at desc)`.execute(db)
    await sql`create index request_log_at on request_log (at)`.execute(db)
    await sql`
      create table key_usage_daily (
        key_id text not null,
        day date not null,
        method text not null,
        account_id text not null,
        calls bigint not null default 0,
        compute_units bigint not null default 0,
        errors bigint not null default 0,
        limited bigint not null default 0,
        primary key (key_id, day, method)
      )`.execute(db)
  },
}
