import type { Migration } from 'kysely'
import { m0001_accounts_keys } from './0001_accounts_keys.ts'
import { m0010_indexer } from './0010_indexer.ts'
import { m0011_token_metadata } from './0011_token_metadata.ts'

/**
 * Every migration, by name. Names sort in application order. Forward-only: a shipped
 * migration is never edited; a change is a new file.
 */
export const migrations: Record<string, Migration> = {
  '0001_accounts_keys': m0001_accounts_keys,
  '0010_indexer': m0010_indexer,
  '0011_token_metadata': m0011_token_metadata,
}
