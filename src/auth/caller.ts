import { isUnlimited } from '../limits/limiter.ts'
import { effectiveLimits, type PlanLimits } from '../limits/plans.ts'
import { compileAllowlists, type KeyAllowlists } from './allowlists.ts'
import type { KeyEnv } from './key-format.ts'
import { isScope, type Scope } from './scopes.ts'
import type { KeyWithAccount } from './store.ts'

/** Who is calling: everything the request path needs, resolved once per key and cached. */
export interface Caller {
  readonly keyId: string
  readonly env: KeyEnv
  readonly scopes: ReadonlySet<Scope>
  readonly accountId: string
  readonly email: string
  readonly plan: string
  readonly limits: PlanLimits
  /** No limit to count against (enterprise): the charger decides without the limiter. */
  readonly unlimited: boolean
  /**
   * The operator of this Halyard: a key of an operator account (`HALYARD_OPERATOR_EMAILS`; in
   * dev mode the dev account), or a request from loopback with the admin token. Only the
   * operator may call operator controls (methods of class `operator`, rpc/methods/spec.ts).
   */
  readonly operator?: true
  /** The key's allowlists, compiled; undefined when it has none (http/access-decision.ts). */
  readonly allow?: KeyAllowlists | undefined
}

/** The header that carries the admin token (the one in the data dir's admin file) to operator controls. */
export const ADMIN_TOKEN_HEADER = 'x-halyard-admin-token'

export function isLoopback(ip: string | undefined): boolean {
  return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1'
}

/** A key's row as the request path sees it; null when there is no key or it is revoked. */
export function callerOf(
  row: KeyWithAccount | undefined,
  operatorEmails: ReadonlySet<string>,
): Caller | null {
  if (!row || row.revoked_at !== null) return null
  const limits = effectiveLimits(row.plan, {
    rps: row.limit_rps,
    rpd: row.limit_rpd === null ? null : Number(row.limit_rpd),
    cups: row.limit_cups,
  })
  return {
    keyId: row.key_id,
    env: row.env,
    scopes: new Set(row.scopes.filter(isScope)),
    accountId: row.account_id,
    email: row.email,
    plan: row.plan,
    limits,
    unlimited: isUnlimited(limits),
    ...(operatorEmails.has(row.email) ? { operator: true as const } : {}),
    allow: compileAllowlists({
      origins: row.allowed_origins,
      ips: row.allowed_ips,
      contracts: row.allowed_contracts,
      methods: row.allowed_methods,
    }),
  }
}
