import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Gas sponsorship (src/gas/policy-store.ts, sponsor-store.ts): policies with running spend
 * totals, per-sender counters, one row per signature issued, and the settlement cursor.
 */
export const m0060_sponsorship: Migration = {
  async up(db: Kysely<unknown>) {
    // The running totals are kept by the transactions that reserve, settle and release, under
    // this row's lock: a decision never sums the whole history. USD amounts are exact decimals.
    // rate_window_*: signatures in the current rate_limit window (start in Unix seconds).
    await sql`
      create table gas_policies (
        id text primary key,
        seq bigserial not null,
        account_id text not null,
        name text not null,
        chain text not null,
        rules jsonb not null,
        status text not null,
        ops_count bigint not null default 0,
        reserved_wei numeric(78, 0) not null default 0,
        reserved_usd numeric not null default 0,
        settled_ops bigint not null default 0,
        settled_wei numeric(78, 0) not null default 0,
        settled_usd numeric not null default 0,
        rate_window_start bigint not null default 0,
        rate_window_count integer not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`.execute(db)
    // Listings in creation order (created_at ties within a clock tick; seq does not).
    await sql`create index gas_policies_account on gas_policies(account_id, seq)`.execute(db)
    // One row per policy and sender: all-time count and spend, and the count of the UTC day in `day`
    // (a reservation on a later day starts the count again).
    await sql`
      create table gas_policy_senders (
        policy_id text not null,
        sender text not null,
        ops_count bigint not null default 0,
        spend_usd numeric not null default 0,
        day text not null,
        day_ops integer not null default 0,
        primary key (policy_id, sender)
      )`.execute(db)
    // Written in the transaction that decides, before the signature leaves: a crash after it loses
    // nothing. reserved → settled (UserOperationEvent seen) or released (validUntil passed unused).
    await sql`
      create table gas_sponsorships (
        id text primary key,
        policy_id text not null,
        network text not null,
        entry_point text not null,
        paymaster text not null,
        sender text not null,
        nonce numeric(78, 0) not null,
        max_cost_wei numeric(78, 0) not null,
        max_cost_usd numeric,
        native_price_usd numeric,
        valid_until bigint not null,
        valid_after bigint not null,
        day text not null,
        state text not null,
        actual_cost_wei numeric(78, 0),
        actual_cost_usd numeric,
        user_op_hash text,
        tx_hash text,
        block_number bigint,
        success boolean,
        created_at timestamptz not null,
        updated_at timestamptz not null default now()
      )`.execute(db)
    // Settlement: an event names entry point, sender and nonce.
    await sql`create index gas_sponsorships_op on gas_sponsorships(network, entry_point, sender, nonce)`.execute(
      db,
    )
    // Release: open reservations by expiry.
    await sql`create index gas_sponsorships_open on gas_sponsorships(network, valid_until) where state = 'reserved'`.execute(
      db,
    )
    // How far the settlement poller has read each network's EntryPoint logs.
    await sql`
      create table gas_sponsor_cursors (
        network text primary key,
        block_number bigint not null,
        block_timestamp bigint not null,
        updated_at timestamptz not null default now()
      )`.execute(db)
  },
}
