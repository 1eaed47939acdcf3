import type { Generated } from 'kysely'

/** Kysely table types of the webhooks feature (migrations 0020, 0021). */

export interface WebhooksTable {
  id: string
  account_id: string
  /** The account holder's e-mail when the webhook was created: where a pause notice goes. */
  notify_email: string | null
  url: string
  chain: string
  event_type: string
  /** Every event type monitored, `event_type` first (migration 0111); empty: `event_type` alone. */
  event_types: Generated<string[]>
  config: string
  secret_enc: string
  status: string
  status_reason: string | null
  notified_at: Date | null
  /** Delivery form, 'A' or 'B' (migration 0080). */
  format: Generated<string>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface WebhookMatchKeysTable {
  network: string
  kind: string
  key: string
  webhook_id: string
}

export interface WebhookEventsTable {
  seq: Generated<string>
  id: string
  webhook_id: string
  network: string | null
  block_number: string | null
  event_type: string
  body: string
  status: string
  attempts: Generated<number>
  round_attempts: Generated<number>
  next_attempt_at: Generated<Date>
  lease_until: Date | null
  last_error: string | null
  created_at: Generated<Date>
  delivered_at: Date | null
}

export interface WebhookAttemptsTable {
  id: Generated<string>
  event_id: string
  webhook_id: string
  attempt: number
  status_code: number | null
  error: string | null
  duration_ms: number
  created_at: Generated<Date>
  /** The instance that made the attempt (migration 0110; null before it). */
  instance: string | null
  /** The first bytes of the receiver's answer (migration 0190; null: no answer, or before it). */
  response_body: string | null
}

export interface MailOutboxTable {
  id: Generated<string>
  to_address: string
  subject: string
  body: string
  sent_at: Date | null
  error: string | null
  created_at: Generated<Date>
  /** Send attempts so far (migration 0021). */
  attempts: Generated<number>
  /** When the row may be claimed: the next retry, or the end of a sender's lease. */
  next_attempt_at: Generated<Date>
}

/** Events produced per account per UTC day (migration 0081, quota.ts). */
export interface WebhookQuotaUsageTable {
  account_id: string
  day: string
  used: string
}

export interface WebhookTables {
  webhook_quota_usage: WebhookQuotaUsageTable
  webhooks: WebhooksTable
  webhook_match_keys: WebhookMatchKeysTable
  webhook_events: WebhookEventsTable
  webhook_attempts: WebhookAttemptsTable
  mail_outbox: MailOutboxTable
}
