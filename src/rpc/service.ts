import type { Redis } from 'ioredis'
import { scopeForRpcMethod } from '../auth/scopes.ts'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { type GatewaySettings, gatewaySettings } from '../config/file.ts'
import { evmMethodCost, methodLabel, solanaMethodCost } from '../limits/compute-units.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../server/metrics.ts'
import { type CachePlan, evmCachePlan, solanaCachePlan } from './cache-policy.ts'
import { LocalResultCache, MemoryResultCache, type ResultCache, TieredResultCache } from './cache-store.ts'
import { GetLogsGuard } from './get-logs.ts'
import {
  type JsonRpcErrorObject,
  type JsonRpcRequest,
  RPC_INTERNAL_ERROR,
  RPC_METHOD_NOT_FOUND,
  RpcError,
  type RpcOutcome,
} from './jsonrpc.ts'
import { checkMethod } from './method-policy.ts'

/** JSON-RPC error code for a call the key's scopes do not allow (inside a batch). */
export const RPC_FORBIDDEN = -32003

/** One call after admission: either refused up front, or to be executed. */
export type AdmittedCall =
  | { request: JsonRpcRequest; refused: JsonRpcErrorObject; computeUnits: 0 }
  | { request: JsonRpcRequest; refused?: undefined; computeUnits: number }

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

/** Calls that change state or live on one node: never coalesced, never cached. */
const UNSHARED = new Set([
  'eth_sendRawTransaction',
  'eth_sendRawTransactionSync',
  'sendTransaction',
  'requestAirdrop',
  'eth_newFilter',
  'eth_newBlockFilter',
  'eth_newPendingTransactionFilter',
  'eth_getFilterChanges',
  'eth_getFilterLogs',
  'eth_uninstallFilter',
])

interface NetworkRuntime {
  settings: GatewaySettings
  logs: GetLogsGuard
}

/**
 * The proxy's logic, shared by HTTP and WebSocket: admission (method policy, scope, cost) and
 * execution: the finality-aware cache, coalescing of identical in-flight calls, the eth_getLogs
 * guard, and the network's upstream pool.
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

  admit(network: Network, caller: Caller, request: JsonRpcRequest): AdmittedCall {
    const verdict = checkMethod(network, request.method)
    if (!verdict.allowed) {
      return { request, refused: { code: RPC_METHOD_NOT_FOUND, message: verdict.reason }, computeUnits: 0 }
    }
    const scope = scopeForRpcMethod(request.method)
    if (!caller.scopes.has(scope)) {
      return {
        request,
        refused: {
          code: RPC_FORBIDDEN,
          message: `this API key lacks the ${scope} scope required for ${request.method}`,
        },
        computeUnits: 0,
      }
    }
    const cost =
      network.kind === 'solana'
        ? solanaMethodCost(request.method)
        : evmMethodCost(request.method, request.params)
    return { request, computeUnits: cost }
  }

  /** Executes an admitted call; the outcome is the upstream's result or error, or Halyard's error. */
  async execute(network: Network, request: JsonRpcRequest): Promise<RpcOutcome> {
    const r = await this.run(network, request)
    return r.outcome ?? { result: JSON.parse(r.json) }
  }

  /** Like `execute`, but says whether the cache answered and keeps a hit as JSON text. */
  async run(network: Network, request: JsonRpcRequest): Promise<Execution> {
    const rt = this.runtime(network)
    const { method, params } = request
    const shared = !UNSHARED.has(method)
    let plan: CachePlan = { kind: 'none' }
    if (rt.settings.cache && shared) {
      plan = network.kind === 'solana' ? solanaCachePlan(method, params) : evmCachePlan(method, params)
      // A block above finality may still be replaced: not looked up, not stored.
      if (plan.kind === 'pinned') {
        const finalized = network.pool.finalizedHead?.()
        if (finalized === undefined || plan.height > finalized) plan = { kind: 'none' }
      }
    }
    const key = shared ? `${network.slug}\n${method}\n${JSON.stringify(params)}` : undefined
    if (key !== undefined && plan.kind !== 'none') {
      const hit = this.cache.getLocal(key) ?? (await this.cache.getRemote(key))
      this.metrics.cacheLookups.inc({ network: network.slug, result: hit === undefined ? 'miss' : 'hit' })
      if (hit !== undefined) {
        this.count(network, method, 'ok')
        return { json: hit, cache: 'hit' }
      }
    }
    if (key === undefined) return this.fetch(network, rt, request, plan, undefined)
    const joined = this.inflight.get(key)
    if (joined) {
      // Counted like any other call: the leader's `fetch` counts only its own.
      const r = await joined
      this.count(network, method, r.outcome?.error ? 'error' : 'ok')
      return r
    }
    const p = this.fetch(network, rt, request, plan, key)
    this.inflight.set(key, p)
    try {
      return await p
    } finally {
      this.inflight.delete(key)
    }
  }

  private async fetch(
    network: Network,
    rt: NetworkRuntime,
    request: JsonRpcRequest,
    plan: CachePlan,
    key: string | undefined,
  ): Promise<Execution> {
    let outcome: RpcOutcome
    try {
      outcome =
        request.method === 'eth_getLogs' && network.kind === 'evm'
          ? await rt.logs.run(request.params)
          : await network.pool.call(request.method, request.params)
    } catch (err) {
      if (!(err instanceof RpcError)) {
        this.logger?.error(
          { err, network: network.slug, method: request.method },
          'JSON-RPC call failed unexpectedly',
        )
      }
      const error =
        err instanceof RpcError ? err.toObject() : { code: RPC_INTERNAL_ERROR, message: 'internal error' }
      outcome = { error }
    }
    this.count(network, request.method, outcome.error ? 'error' : 'ok')
    if (plan.kind === 'none' || key === undefined) return { outcome, cache: 'none' }
    if (outcome.error === undefined && outcome.result !== null && outcome.result !== undefined) {
      if (this.storable(network, plan, outcome.result)) this.cache.set(key, JSON.stringify(outcome.result))
    }
    return { outcome, cache: 'miss' }
  }

  private storable(network: Network, plan: CachePlan, result: unknown): boolean {
    if (plan.kind === 'immutable' || plan.kind === 'pinned') return true
    if (plan.kind !== 'located') return false
    const height = plan.heightOf(result)
    const finalized = network.pool.finalizedHead?.()
    return height !== undefined && finalized !== undefined && height <= finalized
  }

  private count(network: Network, method: string, outcome: 'ok' | 'error') {
    this.metrics.rpcCalls.inc({
      network: network.slug,
      method: methodLabel(network.kind, method),
      outcome,
    })
  }

  private runtime(network: Network): NetworkRuntime {
    let rt = this.runtimes.get(network)
    if (!rt) {
      const settings = gatewaySettings(network.config)
      rt = { settings, logs: new GetLogsGuard(network, settings) }
      this.runtimes.set(network, rt)
    }
    return rt
  }
}
