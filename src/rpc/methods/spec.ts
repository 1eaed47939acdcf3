import type { z } from 'zod'
import type { Scope } from '../../auth/scopes.ts'
import type { Caller } from '../../auth/service.ts'
import type { Network } from '../../chains/registry.ts'
import type { UpstreamPolicy } from '../../chains/upstream-pool.ts'
import type { JsonRpcErrorObject, RpcOutcome } from '../../jsonrpc.ts'
import type { CachePlan } from '../cache-policy.ts'
import type { GetLogsGuard } from '../get-logs.ts'

/**
 * Everything Halyard knows about one JSON-RPC method, in one row: who may call it, what it
 * costs, whether and how its answer is cached or shared, how it goes upstream, and where it is
 * served. `/v1/rpc`, WebSocket and the upstream pool all read these rows (registry.ts).
 */
export interface MethodSpec {
  readonly name: string
  /** Metric label: the name for a row, "other" for a family member (bounded series). */
  readonly label: string
  /**
   * What the method does, for every access rule to read (see `MethodAccess`); `scope` is the key
   * scope that class needs on this surface.
   */
  readonly access: MethodAccess
  readonly scope: Scope
  /** Compute units for these params (eth_blockNumber 1, historical eth_getStorageAt 20). */
  readonly cost: CostRule
  /** May a cached answer exist for these params (cache-policy.ts)? */
  readonly cache: (params: readonly unknown[]) => CachePlan
  /**
   * Identical in-flight calls share one upstream call, and the answer may be cached. False for
   * writes, filters and the airdrop: each of those is its own call.
   */
  readonly coalesce: boolean
  readonly upstream: UpstreamPolicy
  /** Answered by Halyard instead of forwarded as is (eth_getLogs: the range guard). */
  readonly run?: (x: ExecContext, params: readonly unknown[]) => Promise<RpcOutcome>
  /** Answered by the WebSocket connection itself (subscriptions). */
  readonly ws?: 'subscribe' | 'unsubscribe'
  /** Served only where the network allows it (checked per lookup). */
  readonly gate?: 'debug' | 'devnet' | 'devnet-destructive'
  /** Never served; the refusal says why. */
  readonly refusal?: string
  /**
   * The params tuple, where the row checks them itself (the `alchemy_*` rows): the OpenRPC
   * document (src/openrpc) describes each position from it. Rows forwarded as given have none.
   */
  readonly params?: z.ZodType
}

/**
 * Compute units as a function of the params. `note` says how the cost varies, and `pastBlock`
 * what a read pinned to a past block costs (the OpenRPC document shows both); a flat cost has neither.
 */
export type CostRule = ((params: readonly unknown[]) => number) & {
  readonly note?: string
  readonly pastBlock?: number
}

/** A cost that depends on the params, with the sentence the OpenRPC document shows for it. */
export function variableCost(note: string, fn: (params: readonly unknown[]) => number): CostRule {
  return Object.assign((params: readonly unknown[]) => fn(params), { note })
}

/**
 * The class of a method. Every method Halyard serves or forwards is exactly one:
 * - `read`: only reads chain or node state (needs the surface's read scope, `rpc:read` on /v1/rpc);
 * - `write`: sends, submits or changes state for others (needs `rpc:write`, or the surface's
 *   own scope such as `bundler:send`);
 * - `operator`: an operator control of a Halyard service (the bundler's `debug_bundler_*`):
 *   the scope, and the caller must be the operator (auth/service.ts `Caller.operator`);
 * - `refused`: never served for anyone (`refusal` says why): methods that would use keys held
 *   by the node, or change the node itself.
 */
export type MethodAccess = 'read' | 'write' | 'operator' | 'refused'

/** What a row's `run` may use. */
export interface ExecContext {
  readonly network: Network
  readonly logs: GetLogsGuard
  /**
   * The key's caller, for rows whose answer depends on the account (the paymaster's); such
   * rows must not coalesce, since in-flight sharing ignores who asked.
   */
  readonly caller?: Caller
}

/** Names outside the rows that match a family (debug_*, anvil_*, …): specs made on first use. */
export interface Family {
  readonly pattern: RegExp
  spec(name: string): MethodSpec
  /** What the family admits, for the OpenRPC document. */
  readonly what?: string
  /** Names the family is known to serve (listed as methods in the OpenRPC document). */
  readonly known?: readonly string[]
}

export type Lookup = { ok: true; spec: MethodSpec } | { ok: false; error: JsonRpcErrorObject }

export interface MethodRegistry {
  /** The method as this network serves it, or -32601 with the reason. Never indexes a plain object. */
  lookup(network: Network, method: string): Lookup
  /** The MethodSpec a name resolves to, whatever the network (the pool's policy and metric label). */
  describe(method: string): MethodSpec | undefined
  /** Every row (metric children, docs, the parity test). */
  specs(): Iterable<MethodSpec>
  /** The name patterns served beside the rows (the OpenRPC document lists them). */
  families(): Iterable<Family>
}

export const FORWARD: UpstreamPolicy = { sticky: false, write: false, broadcast: false }
export const STICKY: UpstreamPolicy = { sticky: true, write: false, broadcast: false }
export const WRITE: UpstreamPolicy = { sticky: false, write: true, broadcast: false }
export const BROADCAST_WRITE: UpstreamPolicy = { sticky: false, write: true, broadcast: true }

/** Block tags that read current state. Anything else (a number, a hash) is historical. */
const CURRENT_TAGS = new Set(['latest', 'pending', 'safe', 'finalized'])

/** `cu` at the head; `historicalCu` when the block parameter at `blockParam` names a past block. */
export const historical = (blockParam: number, cu: number, historicalCu: number): CostRule =>
  Object.assign(
    (params: readonly unknown[]): number => {
      const block = params[blockParam]
      return block !== undefined && !(typeof block === 'string' && CURRENT_TAGS.has(block))
        ? historicalCu
        : cu
    },
    {
      pastBlock: historicalCu,
      note: `${cu} CU at the head (latest, pending, safe, finalized or no block parameter), ${historicalCu} CU when params[${blockParam}] names a past block`,
    },
  )

export const flat =
  (cu: number): CostRule =>
  () =>
    cu
