import { createHash, randomBytes } from 'node:crypto'
import type { AuthService } from '../auth/service.ts'
import { HalyardError } from '../errors.ts'
import type { RateLimiter } from '../limits/limiter.ts'
import { enqueueMail } from '../mail/outbox.ts'
import type { DB } from '../storage/database.ts'
import { type SessionRow, SessionStore, type SessionWithAccount } from './session-store.ts'

/** A sign-in link works once, for this long. */
export const LINK_TTL_MS = 15 * 60_000
/** A session ends this long after sign-in (or earlier: sign-out, "sign out everywhere"). */
export const SESSION_TTL_MS = 7 * 24 * 3_600_000
/** Links e-mailed per account per LINK_TTL_MS: a stranger cannot flood someone's inbox. */
const LINKS_PER_ACCOUNT = 5
/** Sign-in requests per client address: per second and per day (the shared rate limiter). */
export const SIGN_IN_LIMITS = {
  requestsPerSecond: 2,
  requestsPerDay: 1_000,
  computeUnitsPerSecond: null,
} as const
/** The rate limiter's bucket for one client address's sign-in requests. */
export const signInBucket = (clientIp: string): string => `dashboard-sign-in:${clientIp}`
/** last_seen_at is written at most this often per session (not a write per page view). */
const TOUCH_EVERY_MS = 60_000

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex')
const newToken = (): string => randomBytes(32).toString('base64url')

export interface NewSession {
  /** The cookie value: exists only in the Set-Cookie of the sign-in response. */
  token: string
  accountId: string
}

/**
 * Dashboard sign-in and sessions. Links and sessions are stored as SHA-256 hashes of their
 * tokens; the plaintext exists only in the e-mail (or the CLI's output) and in the cookie.
 */
export class DashboardSessions {
  private readonly store: SessionStore

  constructor(
    private readonly db: DB,
    private readonly auth: AuthService,
    private readonly limiter: RateLimiter,
    private readonly onMail: () => void = () => {},
  ) {
    this.store = new SessionStore(db)
  }

  /** A sign-in link for an account (CLI, dev banner): `${origin}/dashboard/sign-in/link?token=…`; origin is the public URL. */
  createLink(accountId: string, origin: string): Promise<string> {
    return createLoginLink(this.db, accountId, origin)
  }

  /**
   * The sign-in form: e-mails a link when the address has an account and the account's
   * recent links are under the cap. The caller answers the same way in every case, so the
   * form tells nobody which addresses have accounts. Refuses (429) only per client address.
   */
  async requestLink(email: string, clientIp: string, origin: string): Promise<void> {
    const decision = await this.limiter.consume(signInBucket(clientIp), SIGN_IN_LIMITS, {
      requests: 1,
      computeUnits: 0,
    })
    if (!decision.allowed) {
      throw new HalyardError(
        'rate_limited',
        'too many sign-in requests from this address; wait a moment and try again',
        { 'retry-after': String(Math.max(1, decision.retryAfterSeconds ?? 1)) },
      )
    }
    let account: Awaited<ReturnType<AuthService['accountByEmail']>>
    try {
      account = await this.auth.accountByEmail(email)
    } catch {
      return
    }
    if ((await this.store.linksSince(account.id, new Date(Date.now() - LINK_TTL_MS))) >= LINKS_PER_ACCOUNT)
      return
    const token = newToken()
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('dashboard_login_tokens')
        .values({
          token_hash: hashToken(token),
          account_id: account.id,
          expires_at: new Date(Date.now() + LINK_TTL_MS),
        })
        .execute()
      await enqueueMail(trx, {
        to: account.email,
        subject: 'Your Halyard sign-in link',
        text: [
          'Sign in to the Halyard dashboard with this link:',
          '',
          linkUrl(origin, token),
          '',
          'It works once and expires in 15 minutes. If you did not ask for it, ignore this e-mail.',
        ].join('\n'),
      })
    })
    this.onMail()
  }

  /** Consumes a link and opens a session; undefined when the link is unknown, used or expired. */
  async signIn(
    linkToken: string,
    meta: { userAgent?: string; ip?: string },
  ): Promise<NewSession | undefined> {
    const accountId = await this.store.consumeLoginToken(hashToken(linkToken))
    if (!accountId) return undefined
    const token = newToken()
    await this.store.insertSession({
      id: `sess_${randomBytes(12).toString('hex')}`,
      token_hash: hashToken(token),
      account_id: accountId,
      csrf_token: newToken(),
      user_agent: meta.userAgent?.slice(0, 300) ?? null,
      ip: meta.ip?.slice(0, 64) ?? null,
      expires_at: new Date(Date.now() + SESSION_TTL_MS),
    })
    return { token, accountId }
  }

  /** The live session a cookie names, or undefined. */
  async session(token: string): Promise<SessionWithAccount | undefined> {
    if (token.length < 20 || token.length > 100) return undefined
    const s = await this.store.liveSession(hashToken(token))
    if (s && Date.now() - s.last_seen_at.getTime() > TOUCH_EVERY_MS) await this.store.touch(s.id)
    return s
  }

  list(accountId: string): Promise<SessionRow[]> {
    return this.store.liveSessions(accountId)
  }

  revoke(accountId: string, id: string): Promise<number> {
    return this.store.revoke(accountId, id)
  }

  /** "Sign out everywhere": every live session of the account, this one included. */
  revokeAll(accountId: string): Promise<number> {
    return this.store.revoke(accountId)
  }
}

/** A sign-in link without a running server (the CLI on PostgreSQL, or on an idle data dir). */
export async function createLoginLink(db: DB, accountId: string, origin: string): Promise<string> {
  const token = newToken()
  await new SessionStore(db).insertLoginToken({
    token_hash: hashToken(token),
    account_id: accountId,
    expires_at: new Date(Date.now() + LINK_TTL_MS),
  })
  return linkUrl(origin, token)
}

function linkUrl(origin: string, token: string): string {
  return `${origin.replace(/\/+$/, '')}/dashboard/sign-in/link?token=${encodeURIComponent(token)}`
}
