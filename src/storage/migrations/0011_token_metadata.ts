import { type Kysely, type Migration, sql } from 'kysely'

/** Immutable ERC-20 fields, read once per contract (src/tokens/store.ts). */
export const m0011_token_metadata: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table token_metadata (
        network text not null,
        contract text not null,
        name text,
        symbol text,
        decimals integer,
        fetched_at timestamptz not null default now(),
        primary key (network, contract)
      )`.execute(db)
  },
}
