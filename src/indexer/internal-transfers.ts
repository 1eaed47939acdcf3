import type { Network } from '../chains/registry.ts'
import { sleep } from '../common/time.ts'
import type { Logger } from '../logger.ts'
import type { Hash } from '../types.ts'
import type { BlockTrace, TraceMethod, TraceOutcome, TraceReader } from './traces.ts'

/** Whether a network's index holds internal transfers (the query side refuses `internal` if not). */
export type InternalTransfersAvailability = { available: true } | { available: false; reason: string }

type State =
  | { kind: 'unchecked'; retryAt: number; unreached: number }
  | { kind: 'available'; method: TraceMethod }
  | { kind: 'unavailable'; reason: string; at: number }

/** A node that refused tracing is asked again after this long (an operator may enable it). */
const RECHECK_MS = 10 * 60_000
/**
 * A node that could not be reached for the check is asked again after 1, 2, 4, 8 s; after that
 * many misses the network counts as unavailable (until the next check, ten minutes on).
 */
const UNREACHED_RETRY_MS = 1_000
const UNREACHED_GIVE_UP = 5
/** Tries per block before it is indexed without internal transfers. */
const ATTEMPTS = 3
const RETRY_DELAYS_MS = [200, 1_000]
/** This many blocks in a row refused: the node stopped tracing (or cannot for these blocks). */
const REFUSED_IN_A_ROW = 16
/** At most one warning per network per minute about blocks indexed without traces. */
const WARN_INTERVAL_MS = 60_000

interface Untraced {
  count: number
  last: bigint
  refusedInARow: number
  warnedAt: number
  suppressed: number
}

/**
 * Per network: whether the node traces (checked once with the latest block, again every ten
 * minutes while it refuses), and each block's trace for the follower.
 *
 * A block whose tracing keeps failing (three tries) is indexed WITHOUT its internal transfers
 * rather than holding up the index, the token transfers and every webhook: it is logged
 * (a warning per network a minute at most), counted and named in `/ready`. Sixteen refused
 * blocks in a row mark the network unavailable until the next check, so a node that stopped
 * tracing (or a pruned node asked for old blocks) costs one call per block, not three.
 */
export class InternalTransferTracing {
  private readonly states = new Map<string, State>()
  private readonly checks = new Map<string, Promise<void>>()
  private readonly untraced = new Map<string, Untraced>()

  constructor(
    readonly reader: TraceReader,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** What the query side asks before serving the `internal` category. Never waits on the node. */
  availability(network: Network): InternalTransfersAvailability {
    const off = offReason(network)
    if (off) return { available: false, reason: off }
    const s = this.state(network)
    if (s.kind === 'available') return { available: true }
    if (s.kind === 'unavailable') return { available: false, reason: s.reason }
    return {
      available: false,
      reason: `not known yet whether the node of ${network.slug} traces blocks (it is being asked); try again shortly`,
    }
  }

  /** The `/ready` line: `available (method)…` or `unavailable: reason`. */
  async describe(network: Network): Promise<string> {
    if (!offReason(network)) await this.check(network)
    const a = this.availability(network)
    if (!a.available) return `unavailable: ${a.reason}`
    const s = this.states.get(network.slug)
    const u = this.untraced.get(network.slug)
    const method = s?.kind === 'available' ? s.method : 'tracing'
    return u
      ? `available (${method}); ${u.count} block(s) indexed without them after tracing failed, last ${u.last}`
      : `available (${method})`
  }

  /**
   * Whether the follower is to trace the network's blocks (asks the node first if due);
   * undefined while that is not known (the node did not answer yet): the follower then waits
   * rather than index blocks that might have been traced.
   */
  async wanted(network: Network): Promise<boolean | undefined> {
    if (offReason(network)) return false
    await this.check(network)
    const kind = this.states.get(network.slug)?.kind
    return kind === 'unchecked' || kind === undefined ? undefined : kind === 'available'
  }

  /** One try, no retry, no bookkeeping: the head path starts it beside the block and its logs. */
  attempt(network: Network, block: bigint): Promise<TraceOutcome> {
    return this.reader.traceBlock(network.slug, block)
  }

  /**
   * The block's trace: `first` (an attempt already made) if it succeeded, else up to three
   * tries; undefined when they all failed (the block is then indexed without internal transfers).
   * Each try runs through `run` (the caller's request budget); the waits between them hold no slot.
   */
  async trace(
    network: Network,
    block: bigint,
    txHashes: readonly Hash[],
    first?: TraceOutcome,
    run: <T>(task: () => Promise<T>) => Promise<T> = (task) => task(),
  ): Promise<BlockTrace | undefined> {
    let out = first
    for (let i = out ? 1 : 0; i < ATTEMPTS && !out?.ok; i++) {
      if (i > 0) await sleep(RETRY_DELAYS_MS[i - 1] ?? 1_000)
      out = await run(() => this.reader.traceBlock(network.slug, block, txHashes))
    }
    if (out?.ok) {
      const u = this.untraced.get(network.slug)
      if (u) u.refusedInARow = 0
      return out.trace
    }
    this.failed(network, block, out)
    return undefined
  }

  private failed(network: Network, block: bigint, out: TraceOutcome | undefined): void {
    const slug = network.slug
    const reason = out && !out.ok ? out.reason : 'no answer'
    const u = this.untraced.get(slug) ?? {
      count: 0,
      last: block,
      refusedInARow: 0,
      warnedAt: 0,
      suppressed: 0,
    }
    this.untraced.set(slug, u)
    // A block indexed again (its first step was retried, or backfill met it after the head path
    // gave up on it) is still one block indexed without its internal transfers.
    if (u.count === 0 || block !== u.last) u.count++
    if (block > u.last || u.count === 1) u.last = block
    u.refusedInARow = out && !out.ok && out.refused ? u.refusedInARow + 1 : 0
    if (u.refusedInARow >= REFUSED_IN_A_ROW) {
      u.refusedInARow = 0
      this.setUnavailable(
        network,
        `tracing was refused for ${REFUSED_IN_A_ROW} blocks in a row (last: ${reason})`,
      )
    }
    const now = this.now()
    if (now - u.warnedAt < WARN_INTERVAL_MS) {
      u.suppressed++
      return
    }
    this.logger.warn(
      {
        network: slug,
        block: block.toString(),
        reason,
        ...(u.suppressed > 0 ? { alsoUntracedSinceLastWarning: u.suppressed } : {}),
      },
      'tracing a block failed: indexed without its internal transfers',
    )
    u.warnedAt = now
    u.suppressed = 0
  }

  private state(network: Network): State {
    const s = this.states.get(network.slug) ?? UNCHECKED
    // Due for a (re)check: start it in the background; the caller answers from what is known.
    if (this.due(s)) void this.check(network)
    return s
  }

  private due(s: State): boolean {
    const now = this.now()
    if (s.kind === 'unchecked') return now >= s.retryAt
    return s.kind === 'unavailable' && now - s.at >= RECHECK_MS
  }

  /** Asks the node once (concurrent callers share the answer) when the state is due for it. */
  private check(network: Network): Promise<void> {
    const slug = network.slug
    const s = this.states.get(slug) ?? UNCHECKED
    if (!this.due(s)) return Promise.resolve()
    let running = this.checks.get(slug)
    if (!running) {
      running = this.reader
        .traceBlock(slug, 'latest')
        .then((out) => {
          if (out.ok) {
            if (this.states.get(slug)?.kind !== 'available')
              this.logger.info(
                { network: slug, method: out.trace.method },
                'internal transfers: the node traces blocks',
              )
            this.states.set(slug, { kind: 'available', method: out.trace.method })
          } else if (out.refused) {
            this.setUnavailable(
              network,
              `the node answers neither debug_traceBlockByNumber (callTracer) nor trace_block (${out.reason})`,
            )
          } else {
            const unreached = (s.kind === 'unchecked' ? s.unreached : 0) + 1
            if (unreached >= UNREACHED_GIVE_UP)
              this.setUnavailable(
                network,
                `the node did not answer the trace check ${unreached} times (${out.reason})`,
              )
            else
              this.states.set(slug, {
                kind: 'unchecked',
                retryAt: this.now() + UNREACHED_RETRY_MS * 2 ** (unreached - 1),
                unreached,
              })
          }
        })
        .finally(() => this.checks.delete(slug))
      this.checks.set(slug, running)
    }
    return running
  }

  private setUnavailable(network: Network, reason: string): void {
    const prev = this.states.get(network.slug)
    if (prev?.kind !== 'unavailable' || prev.reason !== reason)
      this.logger.warn({ network: network.slug, reason }, 'internal transfers unavailable')
    this.states.set(network.slug, { kind: 'unavailable', reason, at: this.now() })
  }
}

/** Why a network has no internal transfers by configuration, or undefined. */
function offReason(network: Network): string | undefined {
  if (network.kind !== 'evm' || network.config.indexer?.enabled === false)
    return `the indexer does not follow ${network.slug}`
  if (network.config.indexer?.internalTransfers === 'off')
    return `switched off in the network config (indexer.internalTransfers: off)`
  return undefined
}

const UNCHECKED: State = { kind: 'unchecked', retryAt: 0, unreached: 0 }
