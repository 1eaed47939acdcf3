import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Usage per account, UTC day and method (src/usage): what the charger counted, flushed in
 * batches by every process. Rows only grow by additive upserts, so any number of instances
 * and cluster workers may write the same row. The primary key serves every read (one account,
 * a range of days).
 */
export const m0070_usage: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table usage_daily (
        account_id text not null,
        day date not null,
        method text not null,
        requests bigint not null default 0,
        compute_units bigint not null default 0,
        limited bigint not null default 0,
        primary key (account_id, day, method)
      )`.execute(db)
  },
}
