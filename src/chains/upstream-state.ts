import type { HttpUpstream } from './http-upstream.ts'

/** What the pool knows about one upstream, updated by health checks and by live traffic. */
export interface UpstreamStatus {
  readonly id: string
  readonly url: string
  readonly weight: number
  /** Eligible for traffic: verified chain, reachable, caught up, breaker closed. */
  readonly healthy: boolean
  /** true = verified right chain; false = wrong chain (never used); null = not verified yet. */
  readonly chainOk: boolean | null
  readonly head: number | null
  /** Blocks (slots) behind the best upstream. */
  readonly lag: number
  readonly latencyMs: number
  readonly breaker: 'closed' | 'open'
  readonly lastError: string | null
}

/** Latency estimate before any sample: neutral, so a new upstream is neither favoured nor shunned. */
const INITIAL_LATENCY_MS = 5
/** Weight of a new sample in the moving average (about the last 10 calls). */
const EWMA_ALPHA = 0.1
/** The longest a breaker stays open (unless the configured base cooldown is longer still). */
export const MAX_COOLDOWN_MS = 30_000

/**
 * One upstream's health: chain identity, head, latency moving average and circuit breaker.
 *
 * The breaker opens after `breakerFailures` consecutive failures. While open, the upstream is
 * not probed at all; once the cooldown has run, one probe is its trial: success closes the
 * breaker, failure re-opens it for twice as long, up to the maximum. So a node that fails every
 * probe is tried after base, 2×, 4×… the base cooldown, then every maximum cooldown.
 *
 * The doubled cooldown outlives the closing: a flapping node (back for a moment, failing
 * again) resumes where it left off instead of being let in after the base cooldown each time.
 * It resets to the base only when the node opens its breaker after staying closed for a whole
 * maximum cooldown — healthy for as long as the longest it could have been kept out.
 */
export class UpstreamState {
  chainOk: boolean | null = null
  head: number | null = null
  /** Finalized height as reported by the node (Solana finalized slot); null on EVM. */
  finalized: number | null = null
  latencyMs = INITIAL_LATENCY_MS
  failures = 0
  openUntil = 0
  breakerOpen = false
  /** The cooldown the next opening will use. */
  cooldownMs: number
  lastError: string | null = null
  readonly maxCooldownMs: number
  /** When the breaker last closed; -Infinity until it first has (so the first opening is fresh). */
  private closedAt = Number.NEGATIVE_INFINITY

  constructor(
    readonly upstream: HttpUpstream,
    readonly weight: number,
    private readonly breakerFailures: number,
    private readonly baseCooldownMs: number,
  ) {
    this.cooldownMs = baseCooldownMs
    this.maxCooldownMs = Math.max(MAX_COOLDOWN_MS, baseCooldownMs)
  }

  get id(): string {
    return this.upstream.id
  }

  recordLatency(ms: number): void {
    this.latencyMs += EWMA_ALPHA * (ms - this.latencyMs)
  }

  recordSuccess(ms: number): void {
    this.recordLatency(ms)
    this.failures = 0
  }

  /** Whether a health probe is due: always while closed; while open, once the cooldown has run. */
  probeDue(now: number): boolean {
    return !this.breakerOpen || now >= this.openUntil
  }

  /**
   * A transport failure on live traffic or a probe. Returns true when it opened the breaker,
   * or re-opened it because this was the trial after the cooldown.
   */
  recordFailure(message: string, now: number): boolean {
    this.lastError = message
    this.failures++
    if (this.breakerOpen) {
      if (now < this.openUntil) return false
      this.open(now)
      return true
    }
    if (this.failures < this.breakerFailures) return false
    if (now - this.closedAt >= this.maxCooldownMs) this.cooldownMs = this.baseCooldownMs
    this.open(now)
    return true
  }

  private open(now: number): void {
    this.breakerOpen = true
    this.openUntil = now + this.cooldownMs
    this.cooldownMs = Math.min(this.cooldownMs * 2, this.maxCooldownMs)
  }

  /** A successful health probe: closes the breaker once its cooldown has passed. */
  probeSucceeded(now: number): boolean {
    this.failures = 0
    if (this.breakerOpen && now >= this.openUntil) {
      this.breakerOpen = false
      this.closedAt = now
      return true
    }
    return false
  }
}

/** Recent latencies of one method across upstreams, for the hedging delay (p95). */
export class LatencyWindow {
  private readonly samples: number[] = []
  private next = 0
  private p95Cache = 0
  private sinceCompute = 0

  constructor(private readonly size = 128) {}

  add(ms: number): void {
    if (this.samples.length < this.size) this.samples.push(ms)
    else this.samples[this.next] = ms
    this.next = (this.next + 1) % this.size
    if (++this.sinceCompute >= 16) this.compute()
  }

  /** The 95th percentile, or undefined until enough samples exist to mean anything. */
  p95(): number | undefined {
    return this.samples.length >= 16 ? this.p95Cache : undefined
  }

  private compute(): void {
    this.sinceCompute = 0
    const sorted = [...this.samples].sort((a, b) => a - b)
    this.p95Cache = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] ?? 0
  }
}
