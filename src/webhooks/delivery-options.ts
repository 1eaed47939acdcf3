import type { CidrAllowlist } from '../net/address-policy.ts'
import type { Resolver } from '../net/safe-fetch.ts'
import type { NftMetadataSource } from './nft-metadata.ts'

/**
 * How webhooks are delivered (settings.ts reads them from the environment): the delivery worker
 * (delivery.ts) and the sender of one attempt (sender.ts) both read them, so they live apart
 * from either.
 */
export interface DeliveryOptions {
  /** Receiver timeout (15 s). */
  timeoutMs: number
  /** Delays before retry 1..n (form A default: 10 s, 1 min, 10 min, 1 h, 6 h). After the last retry fails the webhook is paused. */
  scheduleMs: readonly number[]
  /** Form B's delays before retry 1..n (1 s … 8 h); after the last the event is failed, the webhook stays active. */
  scheduleBMs?: readonly number[]
  /** Concurrent lanes (one webhook each). */
  concurrency: number
  perHostCap: number
  /** Events claimed per webhook at once and sent one after another. */
  perLane: number
  pollMs: number
  /** Response bytes read at most (the body is discarded; only the status counts). */
  maxResponseBytes: number
  allowLoopback: boolean
  allowlist?: CidrAllowlist
  /** Operator host overrides (HALYARD_WEBHOOK_HOSTS); the result is still checked by the policy. */
  resolve?: Resolver
  protocols: readonly string[]
  /** Extra CA certificates to trust (HALYARD_WEBHOOK_CA_FILE): internal PKI receivers, tests. */
  ca?: string
  /** Token metadata for form B NFT_TRANSFER payloads, added before each attempt (nft-metadata.ts). */
  nftMetadata?: NftMetadataSource
  /** Who makes the attempts (cross-wake.ts instanceId): recorded with each one. */
  instance?: string
  /** An attempt found a signing secret that does not decrypt (the metric counts these). */
  onUndecryptable?: () => void
}

export const DEFAULT_SCHEDULE_MS = [10_000, 60_000, 600_000, 3_600_000, 21_600_000]
