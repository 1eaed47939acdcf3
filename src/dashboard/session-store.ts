import type { Generated, Selectable } from 'kysely'
import { sql } from 'kysely'
import type { DB } from '../storage/database.ts'

export interface DashboardLoginTokensTable {
  token_hash: string
  account_id: string
  created_at: Generated<Date>
  expires_at: Date
  used_at: Date | null
}

export interface DashboardSessionsTable {
  id: string
  token_hash: string
  account_id: string
  csrf_token: string
  user_agent: string | null
  ip: string | null
  created_at: Generated<Date>
  last_seen_at: Generated<Date>
  expires_at: Date
  revoked_at: Date | null
}

export interface DashboardTables {
  dashboard_login_tokens: DashboardLoginTokensTable
  dashboard_sessions: DashboardSessionsTable
}

declare module '../storage/schema.ts' {
  interface Database extends DashboardTables {}
}

export type SessionRow = Selectable<DashboardSessionsTable>

/** A live session and what the pages need of its account. */
export interface SessionWithAccount extends SessionRow {
  email: string
  plan: string
}

export class SessionStore {
  constructor(private readonly db: DB) {}

  async insertLoginToken(row: { token_hash: string; account_id: string; expires_at: Date }): Promise<void> {
    await this.db.insertInto('dashboard_login_tokens').values(row).execute()
  }

  /** Links issued for the account since `since` (the per-account sign-in request limit). */
  async linksSince(accountId: string, since: Date): Promise<number> {
    const r = await this.db
      .selectFrom('dashboard_login_tokens')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('account_id', '=', accountId)
      .where('created_at', '>=', since)
      .executeTakeFirstOrThrow()
    return Number(r.n)
  }

  /**
   * Consumes a link: one UPDATE that only an unused, unexpired row passes, so two requests
   * racing with the same link cannot both sign in.
   */
  async consumeLoginToken(tokenHash: string): Promise<string | undefined> {
    const r = await this.db
      .updateTable('dashboard_login_tokens')
      .set({ used_at: sql<Date>`now()` })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .returning('account_id')
      .executeTakeFirst()
    return r?.account_id
  }

  async insertSession(row: Omit<SessionRow, 'created_at' | 'last_seen_at' | 'revoked_at'>): Promise<void> {
    await this.db.insertInto('dashboard_sessions').values(row).execute()
  }

  liveSession(tokenHash: string): Promise<SessionWithAccount | undefined> {
    return this.db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('accounts as a', 'a.id', 's.account_id')
      .selectAll('s')
      .select(['a.email', 'a.plan'])
      .where('s.token_hash', '=', tokenHash)
      .where('s.revoked_at', 'is', null)
      .where('s.expires_at', '>', sql<Date>`now()`)
      .executeTakeFirst()
  }

  async touch(id: string): Promise<void> {
    await this.db
      .updateTable('dashboard_sessions')
      .set({ last_seen_at: sql<Date>`now()` })
      .where('id', '=', id)
      .execute()
  }

  liveSessions(accountId: string): Promise<SessionRow[]> {
    return this.db
      .selectFrom('dashboard_sessions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .orderBy('created_at', 'desc')
      .limit(100)
      .execute()
  }

  /** Ends one session (`id`) or every live session of the account; returns how many. */
  async revoke(accountId: string, id?: string): Promise<number> {
    let q = this.db
      .updateTable('dashboard_sessions')
      .set({ revoked_at: sql<Date>`now()` })
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null)
    if (id !== undefined) q = q.where('id', '=', id)
    const r = await q.executeTakeFirst()
    return Number(r.numUpdatedRows)
  }
}
