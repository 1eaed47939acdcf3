import type { PushPayload } from './push-frame.ts'
import type { LogFilter, SubscriptionKind } from './routes.ts'
import type { MinedFilter, PendingFilter } from './tx-filters.ts'

// Its own module: the network fan-out (network-streams.ts) and the streams it owns
// (pending-stream.ts, syncing-stream.ts) both name it, and neither may import the other back.
/** One client subscription as the fan-out sees it. */
export interface StreamSubscriber {
  readonly kind: SubscriptionKind
  readonly filter?: LogFilter
  readonly mined?: MinedFilter
  readonly pending?: PendingFilter
  /** Sends one push; the payload is shared by every subscriber of the event. */
  deliver(payload: PushPayload): void
}
