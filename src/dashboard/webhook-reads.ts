import type { DB } from '../storage/database.ts'

/**
 * The one read the webhook service does not offer: a webhook's most recent events, for its
 * dashboard page. Read-only; the caller has already checked the webhook is the account's
 * (WebhookService.get).
 */
export function recentEvents(db: DB, webhookId: string, limit = 20) {
  return db
    .selectFrom('webhook_events')
    .select(['id', 'event_type', 'status', 'attempts', 'last_error', 'created_at', 'delivered_at'])
    .where('webhook_id', '=', webhookId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute()
}
