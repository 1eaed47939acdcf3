import { type Kysely, type Migration, sql } from 'kysely'

export const m0001_accounts_keys: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table accounts (
        id text primary key,
        email text not null unique,
        plan text not null,
        -- per-account overrides of the plan's limits (enterprise "custom"); null = plan default
        limit_rps integer,
        limit_rpd bigint,
        limit_cups integer,
        created_at timestamptz not null default now()
      )`.execute(db)
    await sql`
      create table api_keys (
        id text primary key,
        account_id text not null references accounts(id) on delete cascade,
        env text not null check (env in ('live', 'test')),
        key_hash text not null unique,
        display_prefix text not null,
        name text,
        scopes text[] not null,
        created_at timestamptz not null default now(),
        revoked_at timestamptz
      )`.execute(db)
    await sql`create index api_keys_account on api_keys(account_id)`.execute(db)
  },
}
