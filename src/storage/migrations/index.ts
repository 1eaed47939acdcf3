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
import { m0070_usage } from './0070_usage.ts'
import { m0075_dashboard_sessions } from './0075_dashboard_sessions.ts'
import { m0080_webhooks_form_b } from './0080_webhooks_form_b.ts'
import { m0081_webhooks_quota } from './0081_webhooks_quota.ts'
import { m0090_api_keys_last_used } from './0090_api_keys_last_used.ts'
import { m0100_transfers } from './0100_transfers.ts'
import { m0110_webhook_attempts_instance } from './0110_webhook_attempts_instance.ts'
import { m0111_webhooks_event_types } from './0111_webhooks_event_types.ts'
import { m0120_token_holders_by_first_block } from './0120_token_holders_by_first_block.ts'
import { m0130_api_keys_allowlists } from './0130_api_keys_allowlists.ts'
import { m0134_sponsorship_ceilings } from './0134_sponsorship_ceilings.ts'
import { m0150_indexer_history } from './0150_indexer_history.ts'
import { m0160_compact_index_tables } from './0160_compact_index_tables.ts'
import { m0190_webhook_attempt_responses } from './0190_webhook_attempt_responses.ts'
import { m0200_request_log } from './0200_request_log.ts'
import { m0230_history_scan_claims } from './0230_history_scan_claims.ts'

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
  '0070_usage': m0070_usage,
  '0075_dashboard_sessions': m0075_dashboard_sessions,
  '0080_webhooks_form_b': m0080_webhooks_form_b,
  '0081_webhooks_quota': m0081_webhooks_quota,
  '0090_api_keys_last_used': m0090_api_keys_last_used,
  '0100_transfers': m0100_transfers,
  '0110_webhook_attempts_instance': m0110_webhook_attempts_instance,
  '0111_webhooks_event_types': m0111_webhooks_event_types,
  '0120_token_holders_by_first_block': m0120_token_holders_by_first_block,
  '0130_api_keys_allowlists': m0130_api_keys_allowlists,
  '0134_sponsorship_ceilings': m0134_sponsorship_ceilings,
  '0150_indexer_history': m0150_indexer_history,
  '0160_compact_index_tables': m0160_compact_index_tables,
  '0190_webhook_attempt_responses': m0190_webhook_attempt_responses,
  '0200_request_log': m0200_request_log,
  '0230_history_scan_claims': m0230_history_scan_claims,
}
