import { type Kysely, type Migration, sql } from 'kysely'

/**
 * `alchemy_getTokenBalances` `erc20` pages a holder's tokens in (first_block, contract) order
 * (src/tokens/store.ts touchedContractsPage). The primary key finds the holder's rows but leaves
 * them unordered, so every page sorted the holder's whole token list; with this index a page
 * reads its own rows only. Built once at upgrade (writes to token_holders wait for it).
 */
export const m0120_token_holders_by_first_block: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create index token_holders_by_first_block
      on token_holders (network, holder, first_block, contract)`.execute(db)
  },
}
