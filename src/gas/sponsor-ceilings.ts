import { z } from 'zod'
import { formatUnits, parseDecimal } from '../common/decimal.ts'
import { isPlanName, PLAN_NAMES, type PlanName } from '../limits/plans.ts'
import type { Refusal } from './policy-checks.ts'

/**
 * The operator's ceilings on sponsorship, per plan, on top of every policy's own rules: a policy
 * with `rules: {}` must not let one account drain the paymaster deposit all tenants share. Three
 * ceilings, each in wei of the network's native currency (the unit the deposit is in; a USD
 * ceiling would hang on a price source that can be missing or stale, and policies already have
 * their USD rules):
 *
 * - `perOperation`: an operation's maximum cost (all gas limits × maxFeePerGas);
 * - `perDay`: what an account sponsors per UTC day on the network (open reservations at their
 *   maximum, settled ones at their actual cost, released ones not at all);
 * - `reservedAtOnce`: an account's open reservations (signed, not yet settled or expired) on the
 *   network: what a burst of signatures can take from the deposit before settlement catches up.
 *
 * Configured per network (native units differ per chain) under `sponsorship.ceilings`, per plan,
 * as decimal native amounts; `null` means unlimited. Accounts can be given their own ceilings in
 * the `gas_account_ceilings` table (wei; null = the plan's).
 */

export interface Ceilings {
  perOperationWei: bigint | null
  perDayWei: bigint | null
  reservedAtOnceWei: bigint | null
}

export type PlanCeilings = Readonly<Record<PlanName, Ceilings>>

const ETH = 10n ** 18n

/**
 * Defaults: free sponsors a handful of ordinary operations (an L1 transfer-sized op at 30 gwei is
 * ~0.005 ETH including verification) and can never hold more than 0.05 of the deposit; growth
 * ten times that; enterprise is unlimited unless the operator sets its ceilings.
 */
export const DEFAULT_CEILINGS: PlanCeilings = {
  free: { perOperationWei: ETH / 100n, perDayWei: ETH / 10n, reservedAtOnceWei: ETH / 20n },
  growth: { perOperationWei: ETH / 10n, perDayWei: ETH, reservedAtOnceWei: ETH / 2n },
  enterprise: { perOperationWei: null, perDayWei: null, reservedAtOnceWei: null },
}

/** No ceilings at all (tests of the policies' own rules). */
export const NO_CEILINGS: PlanCeilings = {
  free: DEFAULT_CEILINGS.enterprise,
  growth: DEFAULT_CEILINGS.enterprise,
  enterprise: DEFAULT_CEILINGS.enterprise,
}

const nativeAmount = z
  .string()
  .refine((v) => {
    const d = parseDecimal(v)
    return d !== null && d.scale <= 18
  }, 'must be a decimal string in native units with at most 18 decimals, such as "0.05", or null for unlimited')
  .nullable()

const planCeilingsSchema = z
  .object({
    perOperation: nativeAmount.describe(
      'Most one UserOperation may be sponsored for (native units; null: no ceiling).',
    ),
    perDay: nativeAmount.describe(
      'Most one account may be sponsored for in a UTC day (native units; null: no ceiling).',
    ),
    reservedAtOnce: nativeAmount.describe(
      'Most one account may have reserved for UserOperations not yet included (native units; null: no ceiling).',
    ),
  })
  .partial()
  .strict()

/** The config reference's line for a plan: its default ceilings, from DEFAULT_CEILINGS itself. */
function planDefaultsText(plan: PlanName): string {
  const c = DEFAULT_CEILINGS[plan]
  const show = (w: bigint | null) => (w === null ? 'none' : formatUnits(w, 18))
  return `Ceilings of the ${plan} plan; defaults: perOperation ${show(c.perOperationWei)}, perDay ${show(c.perDayWei)}, reservedAtOnce ${show(c.reservedAtOnceWei)}.`
}

/** `sponsorship.ceilings`: plans not named, and keys not given, keep the defaults. */
export const ceilingsConfigSchema = z
  .object(
    Object.fromEntries(
      PLAN_NAMES.map((p) => [p, planCeilingsSchema.optional().describe(planDefaultsText(p))]),
    ) as Record<PlanName, z.ZodOptional<typeof planCeilingsSchema>>,
  )
  .strict()

export type CeilingsConfig = z.infer<typeof ceilingsConfigSchema>

const toWei = (v: string): bigint => {
  const d = parseDecimal(v)
  if (!d || d.scale > 18) throw new Error(`${v} is not a decimal with at most 18 decimals`)
  return d.mantissa * 10n ** BigInt(18 - d.scale)
}

const pick = (v: string | null | undefined, dflt: bigint | null) =>
  v === undefined ? dflt : v === null ? null : toWei(v)

export function planCeilings(cfg: CeilingsConfig | undefined): PlanCeilings {
  const out = {} as Record<PlanName, Ceilings>
  for (const plan of PLAN_NAMES) {
    const d = DEFAULT_CEILINGS[plan]
    const c = cfg?.[plan] ?? {}
    out[plan] = {
      perOperationWei: pick(c.perOperation, d.perOperationWei),
      perDayWei: pick(c.perDay, d.perDayWei),
      reservedAtOnceWei: pick(c.reservedAtOnce, d.reservedAtOnceWei),
    }
  }
  return out
}

/** One account's ceilings on one network, and what it has used, read in the deciding transaction. */
export interface AccountUsage {
  accountId: string
  /** The account's plan (`free` when the account row is missing: the safe side). */
  plan: string
  overrides: { perOperationWei: bigint | null; perDayWei: bigint | null; reservedAtOnceWei: bigint | null }
  /** Spent on the UTC day being decided (open maxima + settled actual costs). */
  dayWei: bigint
  /** Open reservations of all the account's policies on the network. */
  reservedWei: bigint
}

export function effectiveCeilings(
  plans: PlanCeilings,
  u: Pick<AccountUsage, 'plan' | 'overrides'>,
): Ceilings {
  const base = plans[isPlanName(u.plan) ? u.plan : 'free']
  return {
    perOperationWei: u.overrides.perOperationWei ?? base.perOperationWei,
    perDayWei: u.overrides.perDayWei ?? base.perDayWei,
    reservedAtOnceWei: u.overrides.reservedAtOnceWei ?? base.reservedAtOnceWei,
  }
}

const DAY_MS = 86_400_000

/** Native units of `wei`, exact (for messages). */
export function formatNative(wei: bigint): string {
  const whole = wei / ETH
  const frac = (wei % ETH).toString().padStart(18, '0').replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : `${whole}`
}

const amount = (wei: bigint, symbol: string) => `${wei} wei (${formatNative(wei)} ${symbol})`

/**
 * Whether the operator's ceilings let one more operation of `costWei` through. A refusal names
 * the ceiling, its value and what was asked; per-day and reserved-at-once refusals are 429s
 * (waiting frees them: the next UTC day, or settlement/expiry of open reservations), the
 * per-operation one a 403 (waiting does not help).
 */
export function checkCeilings(
  c: Ceilings,
  u: AccountUsage,
  costWei: bigint,
  ctx: { network: string; symbol: string; nowMs: number },
): Refusal | null {
  const plan = `the ${isPlanName(u.plan) ? u.plan : 'free'} plan`
  const { network, symbol } = ctx
  if (c.perOperationWei !== null && costWei > c.perOperationWei)
    return {
      rule: 'ceiling_per_operation',
      message: `ceiling_per_operation: the operation may cost up to ${amount(costWei, symbol)}; the operator's ceiling for ${plan} on ${network} is ${amount(c.perOperationWei, symbol)} per operation`,
    }
  if (c.perDayWei !== null && u.dayWei + costWei > c.perDayWei) {
    const nextDay = (Math.floor(ctx.nowMs / DAY_MS) + 1) * DAY_MS
    return {
      rule: 'ceiling_per_day',
      message: `ceiling_per_day: the account has sponsored ${amount(u.dayWei, symbol)} on ${network} on ${new Date(ctx.nowMs).toISOString().slice(0, 10)} (UTC) and this operation may cost up to ${amount(costWei, symbol)}; the operator's ceiling for ${plan} is ${amount(c.perDayWei, symbol)} per day`,
      retryAfterSeconds: Math.max(1, Math.ceil((nextDay - ctx.nowMs) / 1000)),
    }
  }
  if (c.reservedAtOnceWei !== null && u.reservedWei + costWei > c.reservedAtOnceWei)
    return {
      rule: 'ceiling_reserved_at_once',
      message: `ceiling_reserved_at_once: the account has ${amount(u.reservedWei, symbol)} reserved on ${network} in signatures not yet settled or expired, and this operation may cost up to ${amount(costWei, symbol)}; the operator's ceiling for ${plan} is ${amount(c.reservedAtOnceWei, symbol)} reserved at once`,
      // The decider replaces it with the time until the account's first open reservation expires.
      retryAfterSeconds: 1,
    }
  return null
}
