import type { AllowlistInput, CreatedKey, KeyView } from '../auth/service.ts'
import { AuthService } from '../auth/service.ts'
import type { AccountRow } from '../auth/store.ts'
import { AuthStore } from '../auth/store.ts'
import type { Env } from '../config/env.ts'
import { loginLinkFor } from '../dashboard/login-link.ts'
import { createLoginLink } from '../dashboard/sessions.ts'
import { isKnownMethod } from '../rpc/methods/known.ts'
import { openStorage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { type AdminFile, readAdminFile } from './data-dir.ts'

type AccountView = Pick<AccountRow, 'id' | 'email' | 'plan'>

/** What the account and key commands need, whether a server is running or not. */
export interface AdminBackend {
  createAccount(email: string, plan?: string): Promise<AccountView>
  setPlan(email: string, plan: string): Promise<AccountView>
  createKey(opts: {
    account: string
    env: string
    scopes?: string[]
    name?: string
    allow?: AllowlistInput
  }): Promise<CreatedKey>
  listKeys(account: string): Promise<KeyView[]>
  /** Replaces the allowlists `allow` names ([] clears one). */
  updateKey(id: string, allow: AllowlistInput): Promise<KeyView>
  revokeKey(id: string): Promise<KeyView>
  /** A one-time dashboard sign-in link for the account, pointing at `baseUrl` (or the public URL). */
  loginLink(account: string, baseUrl: string | undefined): Promise<string>
  close(): Promise<void>
}

/**
 * PGlite is single-process: while a server holds the data dir, go through its loopback admin
 * API. With PostgreSQL, or with no server running, open the database directly.
 */
export async function openAdminBackend(env: Env): Promise<AdminBackend> {
  const running = env.DATABASE_URL ? undefined : readAdminFile(env.dataDir)
  if (running) return new HttpAdminBackend(running)
  const storage = await openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir })
  await migrate(storage.db)
  const auth = new AuthService(new AuthStore(storage.db), { knownMethod: isKnownMethod })
  const view = (a: AccountRow): AccountView => ({ id: a.id, email: a.email, plan: a.plan })
  return {
    createAccount: async (email, plan) => view(await auth.createAccount(email, plan)),
    setPlan: async (email, plan) => view(await auth.setPlan(email, plan)),
    createKey: (o) =>
      auth.createKey({ accountEmail: o.account, env: o.env, scopes: o.scopes, name: o.name, allow: o.allow }),
    listKeys: (account) => auth.listKeys(account),
    updateKey: (id, allow) => auth.updateKeyAllowlists(id, allow),
    revokeKey: (id) => auth.revokeKey(id),
    loginLink: (account, baseUrl) =>
      loginLinkFor(
        auth,
        { createLink: (id, origin) => createLoginLink(storage.db, id, origin) },
        account,
        baseUrl ?? env.HALYARD_PUBLIC_URL ?? `http://${env.HALYARD_HOST}:${env.HALYARD_PORT}`,
      ),
    close: () => storage.close(),
  }
}

class HttpAdminBackend implements AdminBackend {
  constructor(private readonly admin: AdminFile) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.admin.origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.admin.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    })
    const json = (await res.json()) as T & { error?: { message: string } }
    if (!res.ok) throw new Error(json.error?.message ?? `admin API answered HTTP ${res.status}`)
    return json
  }

  createAccount(email: string, plan?: string) {
    return this.call<AccountView>('POST', '/admin/accounts', { email, ...(plan ? { plan } : {}) })
  }
  setPlan(email: string, plan: string) {
    return this.call<AccountView>('POST', '/admin/accounts/plan', { email, plan })
  }
  createKey(o: { account: string; env: string; scopes?: string[]; name?: string; allow?: AllowlistInput }) {
    const { allow, ...rest } = o
    return this.call<CreatedKey>('POST', '/admin/keys', { ...rest, ...wireLists(allow ?? {}) })
  }
  updateKey(id: string, allow: AllowlistInput) {
    return this.call<KeyView>('PATCH', `/admin/keys/${encodeURIComponent(id)}`, wireLists(allow))
  }
  async listKeys(account: string) {
    return (await this.call<{ keys: KeyView[] }>('GET', `/admin/keys?account=${encodeURIComponent(account)}`))
      .keys
  }
  revokeKey(id: string) {
    return this.call<KeyView>('POST', `/admin/keys/${encodeURIComponent(id)}/revoke`)
  }
  async loginLink(account: string, baseUrl: string | undefined) {
    // Without --base-url the server answers with its public URL (HALYARD_PUBLIC_URL).
    const body = { account, ...(baseUrl === undefined ? {} : { base_url: baseUrl }) }
    return (await this.call<{ url: string }>('POST', '/admin/login-links', body)).url
  }
  async close() {}
}

/** The admin API's `allowed_*` fields for the lists given. */
function wireLists(allow: AllowlistInput): Record<string, readonly string[]> {
  const out: Record<string, readonly string[]> = {}
  for (const [name, entries] of Object.entries(allow)) if (entries) out[`allowed_${name}`] = entries
  return out
}
