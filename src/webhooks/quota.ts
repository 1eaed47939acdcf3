import { ConfigError } from '../common/validation.ts'
import { invalidRequest } from '../errors.ts'

/**
 * Webhook limits per plan (the free tier includes 1,000 deliveries per day across
 * all event types; growth and enterprise are "custom", so configurable; null = unlimited).
 *  - deliveriesPerDay: events an account's webhooks may produce per UTC day. Counted in the
 *    matcher, inside the indexer's transaction (webhook_quota_usage), so the count commits or
 *    rolls back with the events. An event past the quota is written with status `over_quota`,
 *    never sent, and shown in the delivery history as attempt 0 with the reason. Retries,
 *    test events and redeliveries asked through the API do not count.
 *  - webhooksPerAccount: how many webhooks an account may have; a create past it is a 400
 *    naming the limit.
 */
export interface WebhookLimits {
  deliveriesPerDay: Readonly<Record<string, number | null>>
  webhooksPerAccount: Readonly<Record<string, number | null>>
}

export const DEFAULT_LIMITS: WebhookLimits = {
  deliveriesPerDay: { free: 1_000, growth: 100_000, enterprise: null },
  webhooksPerAccount: { free: 25, growth: 500, enterprise: null },
}

/** `free=1000,growth=50000,enterprise=unlimited` over the defaults; a bad part names the variable. */
export function parsePlanLimits(
  variable: string,
  text: string | undefined,
  defaults: Readonly<Record<string, number | null>>,
): Record<string, number | null> {
  const out: Record<string, number | null> = { ...defaults }
  if (!text) return out
  for (const part of text.split(',').filter(Boolean)) {
    const [plan, value] = part.split('=').map((s) => s.trim())
    if (!plan || !(plan in defaults) || !value || !/^(\d{1,12}|unlimited)$/.test(value)) {
      throw new ConfigError(
        `invalid environment: ${variable}: "${part}" is not plan=N or plan=unlimited (plans: ${Object.keys(defaults).join(', ')})`,
      )
    }
    out[plan] = value === 'unlimited' ? null : Number(value)
  }
  return out
}

/** A plan's limit; an unknown plan name gets the free plan's. */
export function limitFor(table: Readonly<Record<string, number | null>>, plan: string): number | null {
  return plan in table ? (table[plan] ?? null) : (table.free ?? null)
}

/** The UTC day a delivery counts towards (YYYY-MM-DD). */
export const utcDay = (at: Date) => at.toISOString().slice(0, 10)

export function overQuotaReason(plan: string, quota: number, day: string): string {
  return `over_quota: the account's ${plan} plan includes ${quota} webhook deliveries per UTC day and ${day}'s are used up; this event was recorded and not sent (redeliver it to send it anyway)`
}

export function webhookCapError(plan: string, cap: number) {
  return invalidRequest(
    `webhooks: limit reached: the ${plan} plan allows ${cap} webhooks per account; delete one or move to a larger plan`,
  )
}
