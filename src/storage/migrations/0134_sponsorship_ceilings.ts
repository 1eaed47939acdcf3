import { type Kysely, type Migration, sql } from 'kysely'

/**
 * The operator's sponsorship ceilings per account (src/gas/sponsor-ceilings.ts): what an account
 * holds reserved and has sponsored per network and UTC day, kept by the transactions that
 * reserve, settle and release (as the policies' own totals are), and per-account overrides of
 * the plan's ceilings.
 */
export const m0134_sponsorship_ceilings: Migration = {
  async up(db: Kysely<unknown>) {
    // The account a signature counts against, kept on the row: deleting a policy must not hand
    // its open reservations' capacity back while they can still be mined.
    await sql`alter table gas_sponsorships add column account_id text`.execute(db)
    // An account's open reservations (maxima of signatures not yet settled or expired) per
    // network. The row is also the lock that queues an account's concurrent decisions on one
    // network (policies lock only themselves).
    await sql`
      create table gas_account_reserved (
        account_id text not null,
        network text not null,
        reserved_wei numeric(78, 0) not null default 0,
        primary key (account_id, network)
      )`.execute(db)
    // spend_wei: open reservations' maxima plus settled actual costs of the reservations made on
    // `day`; a released reservation takes its maximum back out.
    await sql`
      create table gas_account_days (
        account_id text not null,
        network text not null,
        day text not null,
        spend_wei numeric(78, 0) not null default 0,
        primary key (account_id, network, day)
      )`.execute(db)
    // Per-account ceilings (wei of the network's native currency); null = the plan's ceiling.
    await sql`
      create table gas_account_ceilings (
        account_id text not null,
        network text not null,
        per_operation_wei numeric(78, 0),
        per_day_wei numeric(78, 0),
        reserved_wei numeric(78, 0),
        primary key (account_id, network)
      )`.execute(db)
  },
}
