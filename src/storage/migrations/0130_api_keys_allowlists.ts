import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Per-key allowlists (docs/browser.md): the origins, client IPs/CIDRs, contract
 * addresses and JSON-RPC methods a key may be used with. An empty list is no restriction, so
 * every existing key keeps working unchanged. Entries are stored as validated and normalised
 * (auth/allowlists.ts); the auth cache compiles them once per key.
 */
export const m0130_api_keys_allowlists: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table api_keys
      add column allowed_origins text[] not null default '{}',
      add column allowed_ips text[] not null default '{}',
      add column allowed_contracts text[] not null default '{}',
      add column allowed_methods text[] not null default '{}'`.execute(db)
  },
}
