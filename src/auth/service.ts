import { timingSafeEqual } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { HalyardError, invalidRequest, notFound, unauthorized } from '../errors.ts'
import { isPlanName, PLAN_NAMES, type PlanName } from '../limits/plans.ts'
import { DEFAULT_DB_TIMEOUT_MS } from '../storage/pg-pool.ts'
import { ALLOWLIST_FIELDS, ALLOWLIST_NAMES, type KnownMethod, parseAllowlist } from './allowlists.ts'
import { type Caller, isLoopback } from './caller.ts'
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedKey, newId } from './key-format.ts'
import { KeyLookups, unverifiable } from './key-lookups.ts'
import { type AllowlistInput, type CreatedKey, type KeyView, keyView } from './key-view.ts'
import { LAST_USED_FLUSH_MS, LastUsedMarks } from './last-used.ts'
import { isScope, SCOPES } from './scopes.ts'
import type { AccountRow, AllowlistPatch, AuthStore } from './store.ts'

// The caller's shape and the admin-token header live in caller.ts; the many modules that ask
// the auth service for a caller import them from here.
export { ADMIN_TOKEN_HEADER, type Caller } from './caller.ts'
export type { AllowlistInput, CreatedKey, KeyView } from './key-view.ts'
export { LAST_USED_FLUSH_MS } from './last-used.ts'

/**
 * Resolved keys are cached for at most this long, so a revoked key stops working within a
 * second on every instance without a database round trip per request.
 */
const CACHE_TTL_MS = 1_000
/**
 * Resolved keys and refused ones live in separate LRUs: anyone can present a stream of random
 * well-formed keys, and those may only ever evict each other, never a real caller's entry.
 * Both are keyed by the key as presented, not by its hash: a hot key is then one map lookup
 * per request, with no SHA-256 and no format check (only well-formed keys ever get an entry).
 */
const KNOWN_MAX = 50_000
const UNKNOWN_MAX = 10_000
/** Entries this old are refreshed in the background while still being served. */
const REFRESH_AFTER_MS = 750

interface CacheEntry {
  caller: Caller | null
  at: number
}

export interface AuthServiceOptions {
  /** Milliseconds clock for the cache's freshness (tests hold time still); default Date.now. */
  now?: () => number
  /** E-mails of the operator's accounts: their keys are the operator (`Caller.operator`). */
  operatorEmails?: readonly string[]
  /** The loopback admin API's token: presented in ADMIN_TOKEN_HEADER from loopback, it makes a caller the operator. */
  adminToken?: string | undefined
  /**
   * Which JSON-RPC method names an allowed-methods list may hold (the method registries,
   * rpc/methods/known.ts). Default: any well-formed name.
   */
  knownMethod?: KnownMethod
  /**
   * How long a key verified before is still served while the database cannot be asked
   * (HALYARD_KEY_STALE_MS; 0 turns it off). Default five minutes.
   */
  staleMs?: number
  /**
   * Longest a request waits for its key's lookup (HALYARD_DB_TIMEOUT_MS): past it the request
   * is answered (stale, or 503) and the lookup finishes for the next one. Default five seconds.
   */
  waitMs?: number
}

/** Default stale window (docs/dependency-failures.md). */
export const DEFAULT_KEY_STALE_MS = 300_000

export class AuthService {
  private readonly known = new LRUCache<string, CacheEntry>({ max: KNOWN_MAX })
  private readonly unknown = new LRUCache<string, CacheEntry>({ max: UNKNOWN_MAX })
  private readonly inflight = new Map<string, Promise<Caller | null>>()
  private generation = 0
  private readonly now: () => number
  private readonly reads: KeyLookups
  /** Keys that authenticated since the last flush of last_used_at. */
  private readonly lastUsed: LastUsedMarks
  private readonly adminToken: Buffer | undefined
  private readonly knownMethod: KnownMethod
  private readonly staleMs: number
  private readonly waitMs: number

  constructor(
    private readonly store: AuthStore,
    opts: AuthServiceOptions = {},
  ) {
    this.now = opts.now ?? Date.now
    const operatorEmails = new Set((opts.operatorEmails ?? []).map((e) => e.trim().toLowerCase()))
    this.reads = new KeyLookups(store, operatorEmails, this.now)
    this.lastUsed = new LastUsedMarks(store)
    this.adminToken = opts.adminToken ? Buffer.from(opts.adminToken) : undefined
    this.knownMethod = opts.knownMethod ?? (() => true)
    this.staleMs = opts.staleMs ?? DEFAULT_KEY_STALE_MS
    this.waitMs = opts.waitMs ?? DEFAULT_DB_TIMEOUT_MS
  }

  /**
   * The caller as the operator when the request carries the admin token from loopback (the
   * token is the loopback admin API's credential: never honoured from another address);
   * otherwise the caller unchanged. Timing-safe; a wrong token is simply not the operator. The
   * peer's address is read (a call into the socket) only for a request that carries a token.
   */
  elevate(
    caller: Caller,
    token: string | string[] | undefined,
    peer: { readonly remoteAddress?: string | undefined },
  ): Caller {
    if (caller.operator || typeof token !== 'string' || !this.adminToken) return caller
    if (!isLoopback(peer.remoteAddress)) return caller
    const given = Buffer.from(token)
    if (given.length !== this.adminToken.length || !timingSafeEqual(given, this.adminToken)) return caller
    return { ...caller, operator: true }
  }

  /** Cache occupancy, keys looked up in the store and the queries that took (tests, diagnostics). */
  cacheStats(): { known: number; unknown: number; storeLookups: number; storeQueries: number } {
    return {
      known: this.known.size,
      unknown: this.unknown.size,
      storeLookups: this.reads.lookups,
      storeQueries: this.reads.queries,
    }
  }

  async createAccount(email: string, plan: string = 'free'): Promise<AccountRow> {
    const normalized = email.trim().toLowerCase()
    if (!/^[^\s@]+@[^\s@]+$/.test(normalized)) throw invalidRequest(`email: not an e-mail address: ${email}`)
    if (!isPlanName(plan)) throw invalidRequest(`plan: must be one of ${PLAN_NAMES.join(', ')}`)
    if (await this.store.accountByEmail(normalized)) {
      throw invalidRequest(`email: an account with e-mail ${normalized} already exists`)
    }
    return this.store.insertAccount({
      id: newId('acct'),
      email: normalized,
      plan,
      limit_rps: null,
      limit_rpd: null,
      limit_cups: null,
    })
  }

  async accountByEmail(email: string): Promise<AccountRow> {
    const account = await this.store.accountByEmail(email.trim().toLowerCase())
    if (!account) throw notFound(`account: no account with e-mail ${email}`)
    return account
  }

  accountById(id: string): Promise<AccountRow | undefined> {
    return this.store.accountById(id)
  }

  async setPlan(email: string, plan: string): Promise<AccountRow> {
    if (!isPlanName(plan)) throw invalidRequest(`plan: must be one of ${PLAN_NAMES.join(', ')}`)
    const account = await this.accountByEmail(email)
    await this.store.setPlan(account.id, plan as PlanName)
    this.invalidate()
    return { ...account, plan }
  }

  async createKey(opts: {
    accountEmail: string
    env: string
    scopes?: string[] | undefined
    name?: string | undefined
    allow?: AllowlistInput | undefined
  }): Promise<CreatedKey> {
    if (opts.env !== 'live' && opts.env !== 'test') throw invalidRequest('env: must be live or test')
    const scopes = opts.scopes && opts.scopes.length > 0 ? opts.scopes : [...SCOPES]
    const bad = scopes.filter((s) => !isScope(s))
    if (bad.length > 0) {
      throw invalidRequest(`scopes: unknown scope ${bad.join(', ')}; known: ${SCOPES.join(', ')}`)
    }
    if (opts.name !== undefined && opts.name.length > 100)
      throw invalidRequest('name: at most 100 characters')
    const lists = this.allowlistPatch(opts.allow ?? {})
    const account = await this.accountByEmail(opts.accountEmail)
    const key = generateApiKey(opts.env)
    const row = await this.store.insertKey({
      id: newId('key'),
      account_id: account.id,
      env: opts.env,
      key_hash: hashApiKey(key),
      display_prefix: displayPrefix(key),
      name: opts.name ?? null,
      scopes: [...new Set(scopes)],
      ...lists,
    })
    return { ...keyView(row), key }
  }

  /** Validates lists (400 naming the list and entry) into the columns they replace. */
  allowlistPatch(input: AllowlistInput): AllowlistPatch {
    const patch: AllowlistPatch = {}
    for (const name of ALLOWLIST_NAMES) {
      const entries = input[name]
      if (entries !== undefined)
        patch[ALLOWLIST_FIELDS[name] as keyof AllowlistPatch] = parseAllowlist(
          name,
          entries,
          this.knownMethod,
        )
    }
    return patch
  }

  /**
   * Replaces the allowlists `input` names on a key (the others are kept). Takes effect on this
   * instance at once and everywhere within the auth cache's second. `accountId`, when given,
   * must own the key (the dashboard): another account's key is a 404 like an unknown one.
   */
  async updateKeyAllowlists(keyId: string, input: AllowlistInput, accountId?: string): Promise<KeyView> {
    const patch = this.allowlistPatch(input)
    const existing = await this.store.keyById(keyId)
    if (!existing || (accountId !== undefined && existing.account_id !== accountId))
      throw notFound(`key: no key with id ${keyId.slice(0, 100)}`)
    if (Object.keys(patch).length === 0) return keyView(existing)
    const row = await this.store.updateAllowlists(keyId, patch)
    this.invalidate()
    return keyView(row ?? existing)
  }

  /** Renames a key (null: no name); `accountId` must own it (another account's key is a 404). */
  async renameKey(keyId: string, name: string | null, accountId: string): Promise<KeyView> {
    if (name !== null && name.length > 100) throw invalidRequest('name: at most 100 characters')
    const existing = await this.store.keyById(keyId)
    if (!existing || existing.account_id !== accountId)
      throw notFound(`key: no key with id ${keyId.slice(0, 100)}`)
    return keyView((await this.store.renameKey(keyId, name)) ?? existing)
  }

  async listKeys(accountEmail: string): Promise<KeyView[]> {
    const account = await this.accountByEmail(accountEmail)
    return (await this.store.keysOfAccount(account.id)).map(keyView)
  }

  async revokeKey(keyId: string): Promise<KeyView> {
    const existing = await this.store.keyById(keyId)
    if (!existing) throw notFound(`key: no key with id ${keyId}`)
    await this.store.revokeKey(keyId)
    this.invalidate()
    const row = await this.store.keyById(keyId)
    return keyView(row!)
  }

  /** Whether a plaintext key is known and not revoked (dev mode re-uses its saved key). */
  async isKeyActive(key: string): Promise<boolean> {
    const row = await this.store.keyWithAccountByHash(hashApiKey(key))
    return row !== undefined && row.revoked_at === null
  }

  /**
   * The caller of a key resolved less than a second ago, without waiting (the request hot
   * path); undefined when the key must go through `authenticate` (unknown, stale, invalid).
   */
  cachedCaller(presented: string): Caller | undefined {
    const caller = this.fresh(presented)?.caller
    if (!caller) return undefined
    this.lastUsed.mark(caller.keyId)
    return caller
  }

  /** Resolves a presented key to its caller, or throws 401. */
  async authenticate(presented: string | undefined): Promise<Caller> {
    if (presented === undefined || presented === '') {
      throw unauthorized('missing API key: send it in the X-API-Key header or as Authorization: Bearer <key>')
    }
    if (!isWellFormedKey(presented)) throw unauthorized('invalid API key')
    const hit = this.fresh(presented)
    const caller = hit ? hit.caller : await this.refreshOrStale(presented)
    if (!caller) throw unauthorized('invalid or revoked API key')
    this.lastUsed.mark(caller.keyId)
    return caller
  }

  /**
   * A key's caller now, for connections that outlive a request (WebSocket): the caller, null
   * when the key is revoked or unknown, undefined when it cannot be told (the database is
   * down: keep what is open rather than close every socket on a blip). Served from the cache
   * while it is younger than CACHE_TTL_MS, so one read per key per second however many
   * connections share the key.
   */
  async recheck(presented: string): Promise<Caller | null | undefined> {
    try {
      return await this.authenticate(presented)
    } catch (err) {
      if (err instanceof HalyardError && err.code === 'unauthorized') return null
      return undefined
    }
  }

  /** Writes last_used_at for every key used since the previous flush (auth/last-used.ts). */
  flushLastUsed(): Promise<void> {
    return this.lastUsed.flush()
  }

  /** Flushes last-used marks every `intervalMs` until stopLastUsedFlush(). */
  startLastUsedFlush(intervalMs = LAST_USED_FLUSH_MS, onError: (err: unknown) => void = () => {}): void {
    this.lastUsed.start(intervalMs, onError)
  }

  /** Stops the timer and writes what is left (the server's close, before storage closes). */
  stopLastUsedFlush(): Promise<void> {
    return this.lastUsed.stop()
  }

  /** The cached resolution of a presented key while it is younger than CACHE_TTL_MS. */
  private fresh(presented: string): { caller: Caller | null } | undefined {
    const hit = this.known.get(presented) ?? this.unknown.get(presented)
    if (!hit) return undefined
    const age = this.now() - hit.at
    if (age >= CACHE_TTL_MS) return undefined
    // Hot keys are re-read before they expire, so no request waits on the database for them.
    if (age >= REFRESH_AFTER_MS) this.refresh(presented).catch(() => {})
    return hit
  }

  /**
   * A fresh read of the key; while the store cannot answer, a key verified within the stale
   * window is served as it was (without waiting for the read once the store is known down).
   * Only keys that resolved to a caller are served stale: a refused or never-seen key gets 503,
   * never a guess. A revocation reaches this instance at the first read that succeeds.
   */
  private async refreshOrStale(presented: string): Promise<Caller | null> {
    const stale = this.known.get(presented)
    const usable = stale?.caller && this.now() - stale.at < this.staleMs ? stale.caller : undefined
    if (usable && this.reads.downSince !== undefined) {
      this.refresh(presented).catch(() => {})
      return usable
    }
    try {
      return await this.withinWait(this.refresh(presented))
    } catch (err) {
      if (usable) return usable
      throw err
    }
  }

  /**
   * The lookup, or 503 once the request has waited `waitMs`: a connection wait and a query wait
   * are each bounded by the database deadline, but a request must not add them up, nor queue
   * behind other keys' lookups for longer. The lookup goes on, and its answer is cached.
   */
  private withinWait(lookup: Promise<Caller | null>): Promise<Caller | null> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.reads.downSince ??= this.now()
        reject(unverifiable())
      }, this.waitMs)
    })
    return Promise.race([lookup, deadline]).finally(() => clearTimeout(timer))
  }

  /** Forgets every resolved key on this instance (revocation, plan change). */
  private invalidate(): void {
    this.generation++
    this.known.clear()
    this.unknown.clear()
    this.inflight.clear()
  }

  /**
   * One lookup per key at a time (a burst of requests after expiry makes one query, not one
   * each). The entry's age counts from when the lookup began, so a read that raced a
   * revocation is still served for less than CACHE_TTL_MS after it.
   */
  private refresh(presented: string): Promise<Caller | null> {
    const existing = this.inflight.get(presented)
    if (existing) return existing
    const started = this.now()
    const generation = this.generation
    const pending: Promise<Caller | null> = this.reads
      .lookup(hashApiKey(presented))
      .then((caller) => {
        // A revocation or plan change since the read began: the read may predate it.
        if (generation === this.generation) this.remember(presented, { caller, at: started })
        return caller
      })
      .finally(() => {
        if (this.inflight.get(presented) === pending) this.inflight.delete(presented)
      })
    this.inflight.set(presented, pending)
    return pending
  }

  /** A key that stops (or starts) resolving moves between the two LRUs. */
  private remember(presented: string, entry: CacheEntry): void {
    if (entry.caller) {
      this.unknown.delete(presented)
      this.known.set(presented, entry)
    } else {
      this.known.delete(presented)
      this.unknown.set(presented, entry)
    }
  }
}
