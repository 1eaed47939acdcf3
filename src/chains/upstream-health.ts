import type { NetworkConfig } from '../config/file.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import { orderCandidates } from './candidates.ts'
import type { GatewaySettings } from './gateway.ts'
import { refreshUpstream } from './health-check.ts'
import { HttpUpstream, type UpstreamError } from './http-upstream.ts'
import type { UpstreamPolicy } from './upstream-pool.ts'
import { type UpstreamState as State, UpstreamState, type UpstreamStatus } from './upstream-state.ts'
import {
  type LastProblem,
  lastProblem,
  noUpstreamError,
  type UpstreamUnavailableError,
} from './upstream-unavailable.ts'

export interface HealthDeps {
  metrics?: Metrics
  logger?: Logger
  /** Clock for the circuit breakers (cooldowns, when a probe is due); default Date.now. */
  now?: () => number
}

/** Chain ids / genesis hashes are re-verified on every probe: a restarted URL may be another node. */
function defaultHealthInterval(cfg: NetworkConfig): number {
  return Math.min(5_000, Math.max(250, Math.floor(cfg.blockTimeMs / 2)))
}

/** EVM finality when the config gives none: Ponder's 65 for mainnet-like chains. */
const DEFAULT_FINALITY_DEPTH = 64

/**
 * What a pool knows of its upstreams (managed-pool.ts routes the calls): background health
 * rounds (chain identity, head, a breaker's probe when its cooldown has run), the best head and
 * each upstream's lag, which upstreams are eligible and in what order to try them, and why each
 * last failed, for the error a refused call reports.
 */
export class UpstreamHealth {
  private readonly states: State[]
  private readonly interval: number
  private readonly probeTimeout: number
  private best: number | undefined
  private checkedOnce = false
  private readonly firstRound: Promise<void>
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private verifying: Promise<void> | undefined
  private readonly now: () => number
  /** Why each upstream last failed (cleared by a good probe): what a refused call reports. */
  private readonly problems = new WeakMap<State, LastProblem>()
  private readonly isEligible = (s: State) => this.eligible(s)

  constructor(
    private readonly cfg: NetworkConfig,
    private readonly settings: GatewaySettings,
    private readonly networkLabel: string,
    private readonly deps: HealthDeps,
  ) {
    this.now = deps.now ?? Date.now
    this.states = cfg.upstreams.map(
      (u, i) =>
        new UpstreamState(
          new HttpUpstream(u.url, { label: `upstream-${i}` }),
          u.weight ?? 1,
          settings.breakerFailures,
          settings.breakerCooldownMs,
        ),
    )
    this.interval = settings.healthCheckMs ?? defaultHealthInterval(cfg)
    this.probeTimeout = Math.min(cfg.requestTimeoutMs, 2_000)
    this.firstRound = this.checkAll().finally(() => {
      this.checkedOnce = true
      this.schedule()
    })
  }

  /**
   * Until the first health round has ended (at most `timeoutMs`): calls wait for it. Undefined
   * once it has, so a call made afterwards (nearly all) awaits nothing here.
   */
  firstChecked(timeoutMs: number): Promise<void> | undefined {
    if (this.checkedOnce) return undefined
    return Promise.race([this.firstRound, delay(timeoutMs)]).then(() => {})
  }

  /** A health round now (one at a time), waited for at most `ms`. */
  async verifyWithin(ms: number): Promise<void> {
    if (ms <= 0) return
    this.verifying ??= this.checkAll().finally(() => {
      this.verifying = undefined
    })
    await Promise.race([this.verifying, delay(ms)])
  }

  bestHead(): number | undefined {
    return this.best
  }

  finalizedHead(): number | undefined {
    if (this.cfg.kind === 'solana') {
      let f: number | undefined
      for (const s of this.states) if (s.chainOk && s.finalized !== null) f = Math.max(f ?? 0, s.finalized)
      return f
    }
    if (this.best === undefined) return undefined
    const depth = this.cfg.finalityDepth ?? Math.max(this.cfg.confirmations, DEFAULT_FINALITY_DEPTH)
    return this.best - depth
  }

  statuses(): UpstreamStatus[] {
    return this.states.map((s) => ({
      id: s.id,
      url: s.upstream.url,
      weight: s.weight,
      healthy: this.eligible(s),
      chainOk: s.chainOk,
      head: s.head,
      lag: this.lagOf(s),
      latencyMs: Math.round(s.latencyMs * 100) / 100,
      breaker: s.breakerOpen ? 'open' : 'closed',
      lastError: s.lastError,
    }))
  }

  /** The upstreams to try, in order (candidates.ts). */
  candidates(policy: UpstreamPolicy): State[] {
    return orderCandidates(this.states, this.isEligible, policy.sticky)
  }

  /** A call to `s` failed: remembered for the refusal, and counted by its breaker. */
  noteFailure(s: State, err: UpstreamError): void {
    this.problems.set(s, lastProblem(err))
    if (s.recordFailure(err.message, this.now())) {
      this.deps.logger?.warn(
        { network: this.networkLabel, upstream: s.id, error: err.message },
        'upstream circuit breaker opened',
      )
      this.publish()
    }
  }

  private eligible(s: State): boolean {
    if (s.chainOk !== true) return false
    // An open breaker closes only through a successful probe after its cooldown (checkAll).
    if (s.breakerOpen) return false
    const lag = this.lagOf(s)
    return lag <= this.settings.maxLagBlocks && lag * this.cfg.blockTimeMs <= this.settings.maxLagMs
  }

  private lagOf(s: State): number {
    if (this.best === undefined || s.head === null) return 0
    return Math.max(0, this.best - s.head)
  }

  noteHead(s: State, head: number) {
    if (!Number.isSafeInteger(head)) return
    if (s.head === null || head > s.head) s.head = head
    if (s.chainOk && (this.best === undefined || head > this.best)) this.best = head
  }

  noUpstream(failures: UpstreamError[]): UpstreamUnavailableError {
    return noUpstreamError(
      `${this.cfg.chain}/${this.cfg.network}`,
      failures,
      this.states.map((s) => ({
        id: s.id,
        chainOk: s.chainOk,
        lastError: s.lastError,
        ...this.problems.get(s),
      })),
    )
  }

  private schedule() {
    if (this.closed) return
    this.timer = setTimeout(() => {
      this.checkAll().finally(() => this.schedule())
    }, this.interval)
    this.timer.unref()
  }

  /**
   * One health round over every upstream; a failed probe needs a new verification to return.
   * An upstream whose breaker is open is left alone until its cooldown has run (upstream-state.ts).
   */
  private async checkAll(): Promise<void> {
    await Promise.all(
      this.states.map(async (s) => {
        if (!s.probeDue(this.now())) return
        const problem = await refreshUpstream(s, this.cfg, this.probeTimeout, this.now, {
          logger: this.deps.logger,
          network: this.networkLabel,
        })
        if (problem) this.problems.set(s, problem)
        else this.problems.delete(s)
      }),
    )
    let best: number | undefined
    for (const s of this.states) if (s.chainOk && s.head !== null) best = Math.max(best ?? 0, s.head)
    // The best head never goes backwards because one node died; it follows the live ones.
    this.best = best ?? this.best
    this.publish()
  }

  private publish() {
    const m = this.deps.metrics
    if (!m) return
    for (const s of this.states) {
      const labels = { network: this.networkLabel, upstream: s.id }
      m.upstreamHealthy.set(labels, this.eligible(s) ? 1 : 0)
      m.upstreamHeadLag.set(labels, this.lagOf(s))
    }
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    await Promise.all(this.states.map((s) => s.upstream.close()))
  }
}

const delay = (ms: number) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms)
    t.unref()
  })
