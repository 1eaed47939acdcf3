import type { AuthTables } from '../auth/store.ts'
import type { BundlerTables } from '../bundler/mempool-store.ts'
import type { DashboardTables } from '../dashboard/session-store.ts'
import type { SponsorshipTables } from '../gas/policy-store.ts'
import type { IndexerTables } from '../indexer/store.ts'
import type { NftTables } from '../nfts/store.ts'
import type { TokenTables } from '../tokens/store.ts'
import type { UsageTables } from '../usage/store.ts'
import type { WalletTables } from '../wallets/store.ts'
import type { WebhookTables } from '../webhooks/store.ts'

/**
 * The whole database as Kysely sees it: each feature declares its own tables in its
 * store.ts and they are joined here.
 */
export interface Database
  extends AuthTables,
    IndexerTables,
    TokenTables,
    WebhookTables,
    WalletTables,
    NftTables,
    BundlerTables,
    SponsorshipTables,
    DashboardTables,
    UsageTables {}
