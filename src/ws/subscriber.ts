import type { PushPayload } from './push-frame.ts'
import type { LogFilter, SubscriptionKind } from './routes.ts'
import type { MinedFilter, PendingFilter } from './tx-filters.ts'

/**
 * One client subscription as the fan-out sees it (network-streams.ts and the streams it holds):
 * its own module, so the streams name it without importing the fan-out that holds them.
 */
export interface StreamSubscriber {
  readonly kind: SubscriptionKind
  readonly filter?: LogFilter
  readonly mined?: MinedFilter
  readonly pending?: PendingFilter
  /** Sends one push; the payload is shared by every subscriber of the event. */
  deliver(payload: PushPayload): void
}
