import { type Generated, type Selectable, sql } from 'kysely'
import type { DB } from '../storage/database.ts'
import type { KeyEnv } from './key-format.ts'

export interface AccountsTable {
  id: string
  email: string
  plan: string
  limit_rps: number | null
  limit_rpd: string | null
  limit_cups: number | null
  created_at: Generated<Date>
}

export interface ApiKeysTable {
  id: string
  account_id: string
  env: KeyEnv
  key_hash: string
  display_prefix: string
  name: string | null
  scopes: string[]
  created_at: Generated<Date>
  revoked_at: Date | null
  /** Set in batches by AuthService's last-used flush (migration 0090); lags by up to a flush. */
  last_used_at: Generated<Date | null>
  /** Per-key allowlists (migration 0130, auth/allowlists.ts): empty = no restriction. */
  allowed_origins: Generated<string[]>
  allowed_ips: Generated<string[]>
  allowed_contracts: Generated<string[]>
  allowed_methods: Generated<string[]>
}

export interface AuthTables {
  accounts: AccountsTable
  api_keys: ApiKeysTable
}

declare module '../storage/schema.ts' {
  interface Database extends AuthTables {}
}

export type AccountRow = Selectable<AccountsTable>
export type KeyRow = Selectable<ApiKeysTable>

/** What authentication needs of a key and its account. */
export interface KeyWithAccount {
  key_hash: string
  key_id: string
  env: KeyEnv
  scopes: string[]
  revoked_at: Date | null
  account_id: string
  email: string
  plan: string
  limit_rps: number | null
  limit_rpd: string | null
  limit_cups: number | null
  allowed_origins: string[]
  allowed_ips: string[]
  allowed_contracts: string[]
  allowed_methods: string[]
}

/** A change to a key's allowlists: each list given replaces the stored one ([] clears it). */
export type AllowlistPatch = Partial<
  Pick<KeyRow, 'allowed_origins' | 'allowed_ips' | 'allowed_contracts' | 'allowed_methods'>
>

export class AuthStore {
  constructor(private readonly db: DB) {}

  insertAccount(row: Omit<AccountRow, 'created_at'>): Promise<AccountRow> {
    return this.db.insertInto('accounts').values(row).returningAll().executeTakeFirstOrThrow()
  }

  accountByEmail(email: string): Promise<AccountRow | undefined> {
    return this.db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst()
  }

  accountById(id: string): Promise<AccountRow | undefined> {
    return this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async setPlan(accountId: string, plan: string): Promise<void> {
    await this.db.updateTable('accounts').set({ plan }).where('id', '=', accountId).execute()
  }

  insertKey(
    row: Omit<KeyRow, 'created_at' | 'revoked_at' | 'last_used_at' | keyof AllowlistPatch> & AllowlistPatch,
  ): Promise<KeyRow> {
    return this.db.insertInto('api_keys').values(row).returningAll().executeTakeFirstOrThrow()
  }

  keysOfAccount(accountId: string): Promise<KeyRow[]> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .execute()
  }

  keyById(id: string): Promise<KeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
  }

  /** The key and its account in one round trip. */
  keyWithAccountByHash(hash: string): Promise<KeyWithAccount | undefined> {
    return this.keyWithAccount().where('k.key_hash', '=', hash).executeTakeFirst()
  }

  /**
   * Several keys and their accounts in one round trip: the authentication path, where cold
   * lookups arriving together (a burst after expiry, a flood of unknown keys) share a query.
   */
  keysWithAccountByHashes(hashes: readonly string[]): Promise<KeyWithAccount[]> {
    if (hashes.length === 0) return Promise.resolve([])
    return this.keyWithAccount().where('k.key_hash', 'in', hashes).execute()
  }

  private keyWithAccount() {
    return this.db
      .selectFrom('api_keys as k')
      .innerJoin('accounts as a', 'a.id', 'k.account_id')
      .select([
        'k.key_hash',
        'k.id as key_id',
        'k.env',
        'k.scopes',
        'k.revoked_at',
        'k.allowed_origins',
        'k.allowed_ips',
        'k.allowed_contracts',
        'k.allowed_methods',
        'a.id as account_id',
        'a.email',
        'a.plan',
        'a.limit_rps',
        'a.limit_rpd',
        'a.limit_cups',
      ])
  }

  /** Marks keys as used now: one statement for every key used since the last flush. */
  async touchKeys(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return
    await sql`update api_keys set last_used_at = now() where id = any(${[...ids]}::text[])`.execute(this.db)
  }

  /** Replaces the lists the patch names; the row after the change, or undefined for an unknown id. */
  updateAllowlists(id: string, patch: AllowlistPatch): Promise<KeyRow | undefined> {
    return this.db.updateTable('api_keys').set(patch).where('id', '=', id).returningAll().executeTakeFirst()
  }

  renameKey(id: string, name: string | null): Promise<KeyRow | undefined> {
    return this.db
      .updateTable('api_keys')
      .set({ name })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
  }

  async revokeKey(id: string): Promise<boolean> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }
}
