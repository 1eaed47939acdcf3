import { type Kysely, type Migration, sql } from 'kysely'

/** NFT API caches (src/nfts/store.ts): detected contracts, and token metadata with its source URI. */
export const m0040_nfts: Migration = {
  async up(db: Kysely<unknown>) {
    // standard is detected once (ERC-165, then the index, then probing); name/symbol never change.
    // The ERC-7572 contractURI document is cached with the URI it came from.
    await sql`
      create table nft_contracts (
        network text not null,
        contract text not null,
        standard text not null,
        name text,
        symbol text,
        contract_uri text,
        collection jsonb,
        collection_error text,
        collection_fetched_at timestamptz,
        detected_at timestamptz not null default now(),
        primary key (network, contract)
      )`.execute(db)
    // One row per token whose metadata was fetched. token_uri is the (expanded) URI it came
    // from: a token whose on-chain URI changed is fetched again. error explains null metadata.
    await sql`
      create table nft_metadata (
        network text not null,
        contract text not null,
        token_id numeric(78, 0) not null,
        token_uri text,
        metadata jsonb,
        name text,
        description text,
        image text,
        traits jsonb not null default '[]',
        error text,
        fetched_at timestamptz not null default now(),
        refreshed_at timestamptz,
        primary key (network, contract, token_id)
      )`.execute(db)
  },
}
