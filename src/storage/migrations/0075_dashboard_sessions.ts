import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Dashboard sign-in (src/dashboard): one-time e-mailed sign-in links and server-side sessions.
 * Both hold only the SHA-256 of their token, so a database read gives no way in. A link row
 * is consumed by setting `used_at` (single use); a session is ended by setting `revoked_at`.
 */
export const m0075_dashboard_sessions: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table dashboard_login_tokens (
        token_hash text primary key,
        account_id text not null references accounts(id) on delete cascade,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        used_at timestamptz
      )`.execute(db)
    await sql`create index dashboard_login_tokens_account on dashboard_login_tokens(account_id, created_at)`.execute(
      db,
    )
    await sql`
      create table dashboard_sessions (
        id text primary key,
        token_hash text not null unique,
        account_id text not null references accounts(id) on delete cascade,
        csrf_token text not null,
        user_agent text,
        ip text,
        created_at timestamptz not null default now(),
        last_seen_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz
      )`.execute(db)
    await sql`create index dashboard_sessions_account on dashboard_sessions(account_id, created_at)`.execute(
      db,
    )
  },
}
