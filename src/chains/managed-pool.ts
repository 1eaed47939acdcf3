import type { NetworkConfig } from '../config/file.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import { orderCandidates } from './candidates.ts'
import { broadcast, FanOutFailure, hedge } from './fan-out.ts'
import { type GatewaySettings, gatewaySettings } from './gateway.ts'
import { refreshUpstream } from './health-check.ts'
import { HttpUpstream, type UpstreamCall, UpstreamError } from './http-upstream.ts'
import { networkSlug } from './slug.ts'
import type {
  DescribeMethod,
  MethodDescription,
  UpstreamCallOptions,
  UpstreamPolicy,
  UpstreamPool,
} from './upstream-pool.ts'
import { UpstreamSeries } from './upstream-series.ts'
import {
  LatencyWindow,
  type UpstreamState as State,
  UpstreamState,
  type UpstreamStatus,
} from './upstream-state.ts'
import {
  type LastProblem,
  lastProblem,
  noUpstreamError,
  type UpstreamUnavailableError,
} from './upstream-unavailable.ts'

/** The method label a batch's latency and series go under. */
const BATCH_LABEL = 'batch'

export interface PoolDeps {
  metrics?: Metrics
  logger?: Logger
  /** Clock for the circuit breakers (cooldowns, when a probe is due); default Date.now. */
  now?: () => number
  /**
   * Each method's upstream policy and metric label, from the JSON-RPC method registry (wired in
   * server/runtime.ts). Without it every method is a plain forward labelled "other".
   */
  describe?: DescribeMethod
}

const PLAIN: MethodDescription = {
  upstream: { sticky: false, write: false, broadcast: false },
  label: 'other',
}

/** Chain ids / genesis hashes are re-verified on every probe: a restarted URL may be another node. */
function defaultHealthInterval(cfg: NetworkConfig): number {
  return Math.min(5_000, Math.max(250, Math.floor(cfg.blockTimeMs / 2)))
}

/** EVM finality when the config gives none: Ponder's 65 for mainnet-like chains. */
const DEFAULT_FINALITY_DEPTH = 64

/**
 * The upstreams of one network: background health checks (chain identity, head), lag
 * exclusion, weighted low-latency selection, failover on transport failures, a circuit
 * breaker per upstream, optional hedging, broadcast of raw transactions, and one deadline
 * across all of it.
 */
export class ManagedPool implements UpstreamPool {
  private readonly states: State[]
  private readonly settings: GatewaySettings
  private readonly interval: number
  private readonly probeTimeout: number
  private readonly latencyByMethod = new Map<string, LatencyWindow>()
  private readonly networkLabel: string
  private best: number | undefined
  private checkedOnce = false
  private readonly firstRound: Promise<void>
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private verifying: Promise<void> | undefined
  private readonly now: () => number
  /** Why each upstream last failed (cleared by a good probe): what a refused call reports. */
  private readonly problems = new WeakMap<State, LastProblem>()
  private readonly series: UpstreamSeries | undefined
  private readonly describe: (method: string) => MethodDescription
  private readonly isEligible = (s: State) => this.eligible(s)

  constructor(
    private readonly cfg: NetworkConfig,
    private readonly deps: PoolDeps = {},
  ) {
    this.settings = gatewaySettings(cfg)
    this.now = deps.now ?? Date.now
    // Same label as the HTTP and RPC series: the network's slug.
    this.networkLabel = networkSlug(cfg.chain, cfg.network)
    const describe = deps.describe
    this.describe = describe ? (method) => describe(cfg.kind, method) : () => PLAIN
    this.series =
      deps.metrics && new UpstreamSeries(deps.metrics, this.networkLabel, (m) => this.describe(m).label)
    this.states = cfg.upstreams.map(
      (u, i) =>
        new UpstreamState(
          new HttpUpstream(u.url, { label: `upstream-${i}` }),
          u.weight ?? 1,
          this.settings.breakerFailures,
          this.settings.breakerCooldownMs,
        ),
    )
    this.interval = this.settings.healthCheckMs ?? defaultHealthInterval(cfg)
    this.probeTimeout = Math.min(cfg.requestTimeoutMs, 2_000)
    this.firstRound = this.checkAll().finally(() => {
      this.checkedOnce = true
      this.schedule()
    })
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

  async call(
    method: string,
    params: readonly unknown[],
    opts: UpstreamCallOptions = {},
  ): Promise<RpcOutcome> {
    const timeoutMs = opts.timeoutMs ?? this.cfg.requestTimeoutMs
    const deadline = Date.now() + timeoutMs
    if (!this.checkedOnce) await Promise.race([this.firstRound, delay(timeoutMs)])
    const policy = this.describe(method).upstream
    let candidates = this.candidates(policy)
    if (candidates.length === 0) {
      // Nothing verified (start-up under load, or every node just came back): verify now,
      // within this call's deadline, rather than refuse until the next scheduled round.
      const left = deadline - Date.now()
      if (left > 0) await Promise.race([this.verifyNow(), delay(left)])
      candidates = this.candidates(policy)
    }
    if (candidates.length === 0) throw this.noUpstream([])
    if (policy.broadcast && this.settings.broadcastTransactions && candidates.length > 1) {
      return this.broadcast(candidates, method, params, deadline)
    }
    return this.failover(candidates, method, policy, params, deadline)
  }

  private async failover(
    candidates: State[],
    method: string,
    policy: UpstreamPolicy,
    params: readonly unknown[],
    deadline: number,
  ): Promise<RpcOutcome> {
    const failures: UpstreamError[] = []
    const hedgeable = this.settings.hedge && !policy.write && !policy.sticky
    let i = 0
    while (i < candidates.length) {
      const left = deadline - Date.now()
      if (left <= 0) break
      const first = candidates[i++]!
      if (failures.length > 0) this.deps.metrics?.failovers.inc({ network: this.networkLabel })
      // A node that accepts and never answers must not eat the whole deadline when others remain.
      const budget = i < candidates.length ? Math.max(Math.floor(left / 2), Math.min(left, 250)) : left
      const second = hedgeable ? candidates[i] : undefined
      try {
        if (second) {
          const r = await this.hedged(first, second, method, params, budget)
          if (r.usedSecond) i++
          return r.outcome
        }
        return await this.attempt(first, method, params, budget)
      } catch (err) {
        if (err instanceof FanOutFailure) {
          failures.push(...err.errors)
          i++
          continue
        }
        if (!(err instanceof UpstreamError)) throw err
        failures.push(err)
        // A write that timed out may have been applied: do not send it again elsewhere.
        if (policy.write && err.kind === 'timeout') break
      }
    }
    throw this.noUpstream(failures)
  }

  /** Sends to `a`; if it has not answered after the method's recent p95, to `b` as well. */
  private hedged(a: State, b: State, method: string, params: readonly unknown[], budget: number) {
    const p95 = this.latencyByMethod.get(method)?.p95()
    const hedgeAfter = Math.max(this.settings.hedgeMinDelayMs, p95 ?? Number.POSITIVE_INFINITY)
    return hedge(
      a,
      b,
      (s, ms) => this.attempt(s, method, params, ms),
      hedgeAfter,
      budget,
      (outcome) => this.deps.metrics?.hedges.inc({ network: this.networkLabel, outcome }),
    )
  }

  /** Raw transactions go to every candidate at once (fan-out.ts `broadcast`). */
  private async broadcast(
    candidates: State[],
    method: string,
    params: readonly unknown[],
    deadline: number,
  ): Promise<RpcOutcome> {
    try {
      return await broadcast(candidates, (s, ms) => this.attempt(s, method, params, ms), deadline)
    } catch (err) {
      throw err instanceof FanOutFailure ? this.noUpstream(err.errors) : err
    }
  }

  /**
   * Read-only calls as one batch to one upstream, failing over as a whole (no hedging: a batch
   * is queued work, not a client waiting on its tail latency).
   */
  async callBatch(calls: readonly UpstreamCall[], opts: UpstreamCallOptions = {}): Promise<RpcOutcome[]> {
    const timeoutMs = opts.timeoutMs ?? this.cfg.requestTimeoutMs
    const deadline = Date.now() + timeoutMs
    if (!this.checkedOnce) await Promise.race([this.firstRound, delay(timeoutMs)])
    const candidates = this.candidates({ sticky: false, write: false, broadcast: false })
    const failures: UpstreamError[] = []
    for (const s of candidates) {
      const left = deadline - Date.now()
      if (left <= 0) break
      try {
        return await this.attempt(s, BATCH_LABEL, (ms) => s.upstream.callBatch(calls, ms), left)
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err
        failures.push(err)
      }
    }
    throw this.noUpstream(failures)
  }

  /** One call (or batch) to one upstream: latency, errors and breaker bookkeeping. */
  private async attempt<T = RpcOutcome>(
    s: State,
    method: string,
    send: readonly unknown[] | ((timeoutMs: number) => Promise<T>),
    timeoutMs: number,
  ): Promise<T> {
    const m = this.deps.metrics
    const series = this.series?.of(s.id, method)
    series?.inc()
    const started = performance.now()
    try {
      const out = (
        typeof send === 'function' ? await send(timeoutMs) : await s.upstream.call(method, send, timeoutMs)
      ) as T
      const ms = performance.now() - started
      s.recordSuccess(ms)
      this.methodWindow(method).add(ms)
      series?.observe(ms / 1000)
      // Live head updates keep lag and finality current between probes.
      const result = (out as RpcOutcome).result
      if (method === 'eth_blockNumber' && typeof result === 'string') this.noteHead(s, Number(result))
      return out
    } catch (err) {
      if (err instanceof UpstreamError) {
        this.problems.set(s, lastProblem(err))
        m?.upstreamErrors.inc({ network: this.networkLabel, upstream: s.id, kind: err.kind })
        if (s.recordFailure(err.message, this.now())) {
          this.deps.logger?.warn(
            { network: this.networkLabel, upstream: s.id, error: err.message },
            'upstream circuit breaker opened',
          )
          this.publish()
        }
      }
      throw err
    }
  }

  private methodWindow(method: string): LatencyWindow {
    let w = this.latencyByMethod.get(method)
    if (!w) {
      w = new LatencyWindow()
      if (this.latencyByMethod.size < 512) this.latencyByMethod.set(method, w)
    }
    return w
  }

  /** The upstreams to try, in order (candidates.ts). */
  private candidates(policy: UpstreamPolicy): State[] {
    return orderCandidates(this.states, this.isEligible, policy.sticky)
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

  private noteHead(s: State, head: number) {
    if (!Number.isSafeInteger(head)) return
    if (s.head === null || head > s.head) s.head = head
    if (s.chainOk && (this.best === undefined || head > this.best)) this.best = head
  }

  private noUpstream(failures: UpstreamError[]): UpstreamUnavailableError {
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

  private verifyNow(): Promise<void> {
    this.verifying ??= this.checkAll().finally(() => {
      this.verifying = undefined
    })
    return this.verifying
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
