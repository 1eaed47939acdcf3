import type { Migration } from 'kysely'
import { m0001_accounts_keys } from './0001_accounts_keys.ts'
import { m0010_indexer } from './0010_indexer.ts'
import { m0011_token_metadata } from './0011_token_metadata.ts'
import { m0020_webhooks } from './0020_webhooks.ts'
import { m0021_webhooks_outbox } from './0021_webhooks_outbox.ts'
import { m0030_wallets } from './0030_wallets.ts'
import { m0040_nfts } from './0040_nfts.ts'
import { m0050_bundler } from './0050_bundler.ts'
import { m0051_bundler_reputation } from './0051_bundler_reputation.ts'
import { m0060_sponsorship } from './0060_sponsorship.ts'

/**
 * Every migration, by name. Names sort in application order. Forward-only: a shipped
 * migration is never edited; a change is a new file.
 */
export const migrations: Record<string, Migration> = {
  '0001_accounts_keys': m0001_accounts_keys,
  '0010_indexer': m0010_indexer,
  '0011_token_metadata': m0011_token_metadata,
  '0020_webhooks': m0020_webhooks,
  '0021_webhooks_outbox': m0021_webhooks_outbox,
  '0030_wallets': m0030_wallets,
  '0040_nfts': m0040_nfts,
  '0050_bundler': m0050_bundler,
  '0051_bundler_reputation': m0051_bundler_reputation,
  '0060_sponsorship': m0060_sponsorship,
}
