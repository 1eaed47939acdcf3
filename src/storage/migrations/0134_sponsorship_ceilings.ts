import { type Kysely, type Migration, sql } from 'kysely'

/**
 * The operator's sponsorship ceilings per account (src/gas/sponsor-ceilings.ts): what an account
 * has sponsored per network and UTC day, kept by the transactions that reserve, settle and
 * release (as the policies' own totals are), and per-account overrides of the plan's ceilings.
 */
export const m0134_sponsorship_ceilings: Migration = {
  async up(db: Kysely<unknown>) {
    // spend_wei: open reservations' maxima plus settled actual costs of the reservations made on
    // `day`; a released reservation takes its maximum back out. The row is also the lock that
    // queues an account's concurrent decisions on one network (policies lock only themselves).
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
