import type { Redis } from 'ioredis'
import type { Caller } from '../auth/service.ts'
import { type GatewaySettings, gatewaySettings } from '../chains/gateway.ts'
import type { ParamsText } from '../chains/http-upstream.ts'
import { RawResult } from '../chains/raw-answer.ts'
import type { Network } from '../chains/registry.ts'
import { toJsonRpcError } from '../http/jsonrpc-errors.ts'
import type { JsonRpcRequest, RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { CachePlan } from './cache-policy.ts'
import { LocalResultCache, MemoryResultCache, type ResultCache, TieredResultCache } from './cache-store.ts'
import { GetLogsGuard } from './get-logs.ts'
import type { MethodSpec } from './methods/spec.ts'

/**
 * What executing one call produced. A cache hit carries the result's JSON text only (the HTTP
 * route splices it into the response without parsing); everything else carries the outcome.
 */
export type Execution =
  | { outcome: RpcOutcome; json?: undefined; cache: 'miss' | 'none' }
  | { outcome?: undefined; json: string; cache: 'hit' }

export interface RpcServiceOptions {
  /** Shared second-level cache (REDIS_URL). */
  redis?: Redis | undefined
  /** Memory cache budget: the summed size of cached keys and result JSON. */
  cacheMaxBytes?: number
  /** Where unexpected failures are logged (the caller only sees -32603 "internal error"). */
  logger?: Logger | undefined
}

export const DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024

interface NetworkRuntime {
  settings: GatewaySettings
  logs: GetLogsGuard
  /**
   * The keys of calls without params (`eth_chainId`, `eth_blockNumber`, …: what clients poll), by
   * method: made once, so a poll's lookup hashes a string it already has instead of a new one.
   */
  bareKeys: Map<string, string>
}

/**
 * The proxy's execution, shared by HTTP and WebSocket (admission: rpc/admission.ts): the
 * finality-aware cache, coalescing of identical in-flight calls, a method's own executor (the
 * eth_getLogs guard), and the network's upstream pool, each as the method's registry row says.
 */
export class RpcService {
  private readonly cache: ResultCache
  private readonly inflight = new Map<string, Promise<Execution>>()
  private readonly runtimes = new WeakMap<Network, NetworkRuntime>()
  private readonly logger: Logger | undefined

  constructor(
    private readonly metrics: Metrics,
    opts: RpcServiceOptions = {},
  ) {
    const memory = new MemoryResultCache(opts.cacheMaxBytes ?? DEFAULT_CACHE_MAX_BYTES)
    this.cache = opts.redis ? new TieredResultCache(memory, opts.redis) : new LocalResultCache(memory)
    this.logger = opts.logger
  }

  /** Executes an admitted call; the outcome is the upstream's result or error, or Halyard's error. */
  async execute(network: Network, request: JsonRpcRequest, spec: MethodSpec): Promise<RpcOutcome> {
    const r = await this.run(network, request, spec)
    return r.outcome ?? { result: JSON.parse(r.json) }
  }

  /**
   * A result this process's memory cache holds, without a promise and without counting it:
   * the fast lane (rpc/fast-lane.ts) looks first, charges, then counts it with `countHit`
   * exactly as `run` counts a hit. Undefined sends the call to `run`.
   */
  cachedLocally(network: Network, request: JsonRpcRequest, spec: MethodSpec): string | undefined {
    const rt = this.runtime(network)
    if (!spec.coalesce || cachePlan(network, rt, spec, request.params).kind === 'none') return undefined
    return this.cache.getLocal(keyOf(network, rt, request.method, paramsText(request.params)))
  }

  /** Counts a hit `cachedLocally` found, as `run` counts one. */
  countHit(network: Network, spec: MethodSpec): void {
    this.metrics.recordCacheLookup(network.slug, 'hit')
    this.count(network, spec, 'ok')
  }

  /**
   * Like `execute`, but says whether the cache answered and keeps a hit as JSON text. Not an
   * async function: a call the cache cannot answer goes to the upstream with no promise step of
   * its own (the leader's promise is the caller's), which a forwarded call pays on every request.
   */
  run(network: Network, request: JsonRpcRequest, spec: MethodSpec, caller?: Caller): Promise<Execution> {
    try {
      const rt = this.runtime(network)
      const { method, params } = request
      if (!spec.coalesce) return this.fetch(network, rt, request, spec, NO_PLAN, undefined, undefined, caller)
      const plan = cachePlan(network, rt, spec, params)
      // Written once: the key's part, and the params the upstream is sent.
      const text = paramsText(params)
      const key = keyOf(network, rt, method, text)
      if (plan.kind !== 'none') {
        const hit = this.cache.getLocal(key)
        if (hit === undefined) return this.lookRemote(network, rt, request, spec, plan, key, text)
        this.metrics.recordCacheLookup(network.slug, 'hit')
        this.count(network, spec, 'ok')
        return Promise.resolve({ json: hit, cache: 'hit' })
      }
      return this.lead(network, rt, request, spec, plan, key, text)
    } catch (err) {
      // A rejection, as from the async function this was.
      return Promise.reject(err)
    }
  }

  /** The second-level cache (Redis), then the upstream. */
  private async lookRemote(
    network: Network,
    rt: NetworkRuntime,
    request: JsonRpcRequest,
    spec: MethodSpec,
    plan: CachePlan,
    key: string,
    text: ParamsText,
  ): Promise<Execution> {
    const hit = await this.cache.getRemote(key)
    this.metrics.recordCacheLookup(network.slug, hit === undefined ? 'miss' : 'hit')
    if (hit !== undefined) {
      this.count(network, spec, 'ok')
      return { json: hit, cache: 'hit' }
    }
    return this.lead(network, rt, request, spec, plan, key, text)
  }

  /** The upstream call, joined by identical calls while it is in flight. */
  private lead(
    network: Network,
    rt: NetworkRuntime,
    request: JsonRpcRequest,
    spec: MethodSpec,
    plan: CachePlan,
    key: string,
    text: ParamsText,
  ): Promise<Execution> {
    const joined = this.inflight.get(key)
    if (joined) {
      // Counted like any other call: the leader's `fetch` counts only its own.
      return joined.then((r) => {
        this.count(network, spec, r.outcome?.error ? 'error' : 'ok')
        return r
      })
    }
    const p = this.fetch(network, rt, request, spec, plan, key, text)
    this.inflight.set(key, p)
    // Registered before the caller's own reaction, so the entry is gone when the caller resumes.
    // Nothing replaces the entry meanwhile (a call finding it joins it), so it is still `p`.
    const forget = () => this.inflight.delete(key)
    p.then(forget, forget)
    return p
  }

  private async fetch(
    network: Network,
    rt: NetworkRuntime,
    request: JsonRpcRequest,
    spec: MethodSpec,
    plan: CachePlan,
    key: string | undefined,
    /** The params' JSON text, written for the key (a call with no key: undefined). */
    text: ParamsText | undefined,
    caller?: Caller,
  ): Promise<Execution> {
    let outcome: RpcOutcome
    try {
      outcome = spec.run
        ? await spec.run({ network, logs: rt.logs, ...(caller ? { caller } : {}) }, request.params)
        : // The gateway forwarding the client's call: the node's answer goes back unchanged,
          // whatever its shape, so a raw pool call and not a typed read (chains/reads.ts), its
          // result kept as the node's bytes where the pool can (chains/raw-answer.ts).
          await forward(network, request, text)
    } catch (err) {
      outcome = {
        error: toJsonRpcError(err, {
          logger: this.logger,
          what: 'JSON-RPC call',
          fields: { network: network.slug, method: request.method },
        }),
      }
    }
    this.count(network, spec, outcome.error ? 'error' : 'ok')
    if (plan.kind === 'none' || key === undefined) return { outcome, cache: 'none' }
    if (outcome.error === undefined) {
      // A forwarded result is stored as the node's bytes, with no parse unless the plan reads it.
      const json = outcome instanceof RawResult ? outcome.json : JSON.stringify(outcome.result)
      if (json !== 'null' && json !== undefined && this.storable(network, plan, outcome))
        this.cache.set(key, json)
    }
    return { outcome, cache: 'miss' }
  }

  private storable(network: Network, plan: CachePlan, outcome: RpcOutcome): boolean {
    if (plan.kind === 'immutable' || plan.kind === 'pinned') return true
    if (plan.kind !== 'located') return false
    const height = plan.heightOf(outcome.result)
    const finalized = network.pool.finalizedHead?.()
    return height !== undefined && finalized !== undefined && height <= finalized
  }

  private count(network: Network, spec: MethodSpec, outcome: 'ok' | 'error') {
    this.metrics.recordRpcCall(network.slug, spec.label, outcome)
  }

  private runtime(network: Network): NetworkRuntime {
    let rt = this.runtimes.get(network)
    if (!rt) {
      const settings = gatewaySettings(network.config)
      rt = { settings, logs: new GetLogsGuard(network, settings), bareKeys: new Map() }
      this.runtimes.set(network, rt)
    }
    return rt
  }
}

const NO_PLAN: CachePlan = Object.freeze({ kind: 'none' })

/** How a call's result may be cached here, `none` when the network's cache is off. */
function cachePlan(
  network: Network,
  rt: NetworkRuntime,
  spec: MethodSpec,
  params: readonly unknown[],
): CachePlan {
  if (!rt.settings.cache) return { kind: 'none' }
  const plan = spec.cache(params)
  // A block above finality may still be replaced: not looked up, not stored.
  if (plan.kind !== 'pinned') return plan
  const finalized = network.pool.finalizedHead?.()
  return finalized === undefined || plan.height > finalized ? { kind: 'none' } : plan
}

/** Where a call's result is cached and in-flight calls meet: the same call on the same network. */
function cacheKey(network: Network, method: string, params: ParamsText): string {
  return `${network.slug}\n${method}\n${params}`
}

/** Method names are the registry's (admission refuses others), so the map stays small; capped all the same. */
const MAX_BARE_KEYS = 1024

/** The call's key; a call without params gets the one made for its method before. */
function keyOf(network: Network, rt: NetworkRuntime, method: string, text: ParamsText): string {
  if (text !== NO_PARAMS) return cacheKey(network, method, text)
  const kept = rt.bareKeys.get(method)
  if (kept !== undefined) return kept
  const key = cacheKey(network, method, text)
  if (rt.bareKeys.size < MAX_BARE_KEYS) rt.bareKeys.set(method, key)
  return key
}

const NO_PARAMS = '[]' as ParamsText

function paramsText(params: readonly unknown[]): ParamsText {
  return params.length === 0 ? NO_PARAMS : (JSON.stringify(params) as ParamsText)
}

/** The client's call sent to the network's nodes, its result kept as bytes where the pool can. */
function forward(
  network: Network,
  request: JsonRpcRequest,
  text: ParamsText | undefined,
): Promise<RpcOutcome> {
  const pool = network.pool
  return pool.callRaw
    ? pool.callRaw(request.method, text ?? request.params)
    : pool.call(request.method, request.params)
}
