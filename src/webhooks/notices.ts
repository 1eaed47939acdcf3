import type { Mail } from '../mail/sender.ts'
import type { WebhookRow } from './store.ts'

/** E-mails to the account holder when the service pauses or disables a webhook (via the mail outbox). */

export function disableNotice(row: WebhookRow, reason: string): Mail {
  return {
    to: row.notify_email as string,
    subject: `Halyard webhook ${row.id} disabled: its URL no longer passes the safety checks`,
    text: [
      `Your webhook ${row.id} (${row.event_type} on ${row.chain}) was disabled before delivering to ${row.url}:`,
      reason,
      'Halyard only sends to public HTTPS addresses. Nothing was sent, and its events are kept.',
      `Point it at a URL that passes with PATCH /v1/webhooks/${row.id} {"url":"https://…"}; it becomes active again and the kept events go out.`,
    ].join('\n'),
  }
}

export function pauseNotice(row: WebhookRow, lastError: string): Mail {
  return {
    to: row.notify_email as string,
    subject: `Halyard webhook ${row.id} paused after failed deliveries`,
    text: [
      `Your webhook ${row.id} (${row.event_type} on ${row.chain}) could not deliver to ${row.url}.`,
      `The last attempt failed with: ${lastError}`,
      'The first attempt and every scheduled retry failed, so the webhook was paused and its undelivered events recorded as failed.',
      `Fix the receiver, then resume with PATCH /v1/webhooks/${row.id} {"status":"active"};`,
      `failed events can be sent again with POST /v1/webhooks/${row.id}/deliveries/{event_id}/redeliver.`,
    ].join('\n'),
  }
}
