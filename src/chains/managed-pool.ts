import type { NetworkConfig } from '../config/file.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import { broadcast, FanOutFailure, hedge } from './fan-out.ts'
import { type GatewaySettings, gatewaySettings } from './gateway.ts'
import { type CallParams, type UpstreamCall, UpstreamError } from './http-upstream.ts'
import { networkSlug } from './slug.ts'
import { type HealthDeps, UpstreamHealth } from './upstream-health.ts'
import type {
  DescribeMethod,
  MethodDescription,
  UpstreamCallOptions,
  UpstreamPolicy,
  UpstreamPool,
} from './upstream-pool.ts'
import { UpstreamSeries } from './upstream-series.ts'
import { LatencyWindow, type UpstreamState as State, type UpstreamStatus } from './upstream-state.ts'

/** The method label a batch's latency and series go under. */
const BATCH_LABEL = 'batch'

export interface PoolDeps extends HealthDeps {
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

/**
 * The upstreams of one network: background health checks (chain identity, head), lag
 * exclusion, weighted low-latency selection, failover on transport failures, a circuit
 * breaker per upstream, optional hedging, broadcast of raw transactions, and one deadline
 * across all of it.
 */
export class ManagedPool implements UpstreamPool {
  private readonly health: UpstreamHealth
  private readonly settings: GatewaySettings
  private readonly latencyByMethod = new Map<string, LatencyWindow>()
  private readonly networkLabel: string
  private readonly series: UpstreamSeries | undefined
  private readonly describe: (method: string) => MethodDescription

  constructor(
    private readonly cfg: NetworkConfig,
    private readonly deps: PoolDeps = {},
  ) {
    this.settings = gatewaySettings(cfg)
    // Same label as the HTTP and RPC series: the network's slug.
    this.networkLabel = networkSlug(cfg.chain, cfg.network)
    const describe = deps.describe
    this.describe = describe ? (method) => describe(cfg.kind, method) : () => PLAIN
    this.series =
      deps.metrics && new UpstreamSeries(deps.metrics, this.networkLabel, (m) => this.describe(m).label)
    this.health = new UpstreamHealth(cfg, this.settings, this.networkLabel, deps)
  }

  bestHead(): number | undefined {
    return this.health.bestHead()
  }

  finalizedHead(): number | undefined {
    return this.health.finalizedHead()
  }

  statuses(): UpstreamStatus[] {
    return this.health.statuses()
  }

  call(method: string, params: readonly unknown[], opts: UpstreamCallOptions = {}): Promise<RpcOutcome> {
    return this.send(method, params, opts, false)
  }

  /** `call`, with a successful answer kept as the node's bytes (chains/raw-answer.ts). */
  callRaw(method: string, params: CallParams, opts: UpstreamCallOptions = {}): Promise<RpcOutcome> {
    return this.send(method, params, opts, true)
  }

  /**
   * Once the first health round is over and a node is eligible (nearly every call), the call
   * goes straight to `failover`: no async step of its own in the forwarded call's chain.
   */
  private send(
    method: string,
    params: CallParams,
    opts: UpstreamCallOptions,
    raw: boolean,
  ): Promise<RpcOutcome> {
    const timeoutMs = opts.timeoutMs ?? this.cfg.requestTimeoutMs
    const deadline = Date.now() + timeoutMs
    try {
      const first = this.health.firstChecked(timeoutMs)
      if (first) return first.then(() => this.route(method, params, deadline, raw))
      const policy = this.describe(method).upstream
      const candidates = this.health.candidates(policy)
      if (candidates.length === 0) return this.route(method, params, deadline, raw)
      return this.dispatch(candidates, method, policy, params, deadline, raw)
    } catch (err) {
      // A rejection, as from the async function this was: callers `.catch` it.
      return Promise.reject(err)
    }
  }

  private async route(
    method: string,
    params: CallParams,
    deadline: number,
    raw: boolean,
  ): Promise<RpcOutcome> {
    const policy = this.describe(method).upstream
    let candidates = this.health.candidates(policy)
    if (candidates.length === 0) {
      // Nothing verified (start-up under load, or every node just came back): verify now,
      // within this call's deadline, rather than refuse until the next scheduled round.
      await this.health.verifyWithin(deadline - Date.now())
      candidates = this.health.candidates(policy)
    }
    if (candidates.length === 0) throw this.health.noUpstream([])
    return this.dispatch(candidates, method, policy, params, deadline, raw)
  }

  private dispatch(
    candidates: State[],
    method: string,
    policy: UpstreamPolicy,
    params: CallParams,
    deadline: number,
    raw: boolean,
  ): Promise<RpcOutcome> {
    if (policy.broadcast && this.settings.broadcastTransactions && candidates.length > 1) {
      return this.broadcast(candidates, method, params, deadline)
    }
    return this.failover(candidates, method, policy, params, deadline, raw)
  }

  private async failover(
    candidates: State[],
    method: string,
    policy: UpstreamPolicy,
    params: CallParams,
    deadline: number,
    raw: boolean,
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
          const r = await this.hedged(first, second, method, params, budget, raw)
          if (r.usedSecond) i++
          return r.outcome
        }
        return await this.attempt(first, method, params, budget, raw)
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
    throw this.health.noUpstream(failures)
  }

  /** Sends to `a`; if it has not answered after the method's recent p95, to `b` as well. */
  private hedged(a: State, b: State, method: string, params: CallParams, budget: number, raw: boolean) {
    const p95 = this.latencyByMethod.get(method)?.p95()
    const hedgeAfter = Math.max(this.settings.hedgeMinDelayMs, p95 ?? Number.POSITIVE_INFINITY)
    return hedge(
      a,
      b,
      (s, ms) => this.attempt(s, method, params, ms, raw),
      hedgeAfter,
      budget,
      (outcome) => this.deps.metrics?.hedges.inc({ network: this.networkLabel, outcome }),
    )
  }

  /** Raw transactions go to every candidate at once (fan-out.ts `broadcast`). */
  private async broadcast(
    candidates: State[],
    method: string,
    params: CallParams,
    deadline: number,
  ): Promise<RpcOutcome> {
    try {
      return await broadcast(candidates, (s, ms) => this.attempt(s, method, params, ms), deadline)
    } catch (err) {
      throw err instanceof FanOutFailure ? this.health.noUpstream(err.errors) : err
    }
  }

  /**
   * Read-only calls as one batch to one upstream, failing over as a whole (no hedging: a batch
   * is queued work, not a client waiting on its tail latency).
   */
  async callBatch(calls: readonly UpstreamCall[], opts: UpstreamCallOptions = {}): Promise<RpcOutcome[]> {
    const timeoutMs = opts.timeoutMs ?? this.cfg.requestTimeoutMs
    const deadline = Date.now() + timeoutMs
    const first = this.health.firstChecked(timeoutMs)
    if (first) await first
    const candidates = this.health.candidates({ sticky: false, write: false, broadcast: false })
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
    throw this.health.noUpstream(failures)
  }

  /** One call (or batch) to one upstream: latency, errors and breaker bookkeeping. */
  private async attempt<T = RpcOutcome>(
    s: State,
    method: string,
    send: CallParams | ((timeoutMs: number) => Promise<T>),
    timeoutMs: number,
    /** A successful answer kept as the node's bytes (`callRaw`). */
    raw = false,
  ): Promise<T> {
    const m = this.deps.metrics
    const series = this.series?.of(s.id, method)
    series?.inc()
    const started = performance.now()
    try {
      const out = (
        typeof send === 'function'
          ? await send(timeoutMs)
          : raw
            ? await s.upstream.callRaw(method, send, timeoutMs)
            : await s.upstream.call(method, send, timeoutMs)
      ) as T
      const ms = performance.now() - started
      s.recordSuccess(ms)
      // The method's p95 is read by hedging alone: with hedging off nothing keeps it.
      if (this.settings.hedge) this.methodWindow(method).add(ms)
      series?.observe(ms / 1000)
      // Live head updates keep lag and finality current between probes.
      // (The method first: reading a forwarded result parses it; chains/raw-answer.ts.)
      if (method === 'eth_blockNumber') {
        const result = (out as RpcOutcome).result
        if (typeof result === 'string') this.health.noteHead(s, Number(result))
      }
      return out
    } catch (err) {
      if (err instanceof UpstreamError) {
        m?.upstreamErrors.inc({ network: this.networkLabel, upstream: s.id, kind: err.kind })
        this.health.noteFailure(s, err)
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

  async close(): Promise<void> {
    await this.health.close()
  }
}
