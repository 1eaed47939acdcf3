import type { AllowlistName } from './allowlists.ts'
import type { KeyEnv } from './key-format.ts'
import type { KeyRow } from './store.ts'

/** Lists to set on a key: each given list replaces the stored one; an empty one clears it. */
export type AllowlistInput = Partial<Record<AllowlistName, readonly string[]>>

/** A key as the API, the CLI and the dashboard show it: never the key itself, never its hash. */
export interface KeyView {
  id: string
  account_id: string
  env: KeyEnv
  name: string | null
  prefix: string
  scopes: string[]
  created_at: string
  revoked_at: string | null
  /** When the key last authenticated, to within a flush interval; null if never since recorded. */
  last_used_at: string | null
  /** Allowlists (docs/browser.md); empty = no restriction. */
  allowed_origins: string[]
  allowed_ips: string[]
  allowed_contracts: string[]
  allowed_methods: string[]
}

export interface CreatedKey extends KeyView {
  /** The plaintext key: exists only in this response. */
  key: string
}

export function keyView(row: KeyRow): KeyView {
  return {
    id: row.id,
    account_id: row.account_id,
    env: row.env,
    name: row.name,
    prefix: row.display_prefix,
    scopes: row.scopes,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
    last_used_at: row.last_used_at ? row.last_used_at.toISOString() : null,
    allowed_origins: row.allowed_origins,
    allowed_ips: row.allowed_ips,
    allowed_contracts: row.allowed_contracts,
    allowed_methods: row.allowed_methods,
  }
}
