import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { type HalyardError, invalidRequest } from '../errors.ts'
import { decideCall, refusalRpcError } from '../http/access-decision.ts'
import {
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcRequest,
  RPC_INVALID_REQUEST,
} from '../jsonrpc.ts'
import { parseEnvelope } from './envelope.ts'
import { registries } from './methods/registry.ts'
import type { MethodRegistry, MethodSpec } from './methods/spec.ts'

/**
 * One admission for every JSON-RPC surface (HTTP and WebSocket): envelope, the method as the
 * network serves it, the key's scope for it, and its cost, for a single call or a batch, before
 * any upstream work. Each surface then maps the result onto its wire (rpc/endpoint.ts,
 * ws/connection.ts).
 */

/** A call to run: its request, its method's spec, its cost. */
export interface Call {
  readonly request: JsonRpcRequest
  readonly spec: MethodSpec
  readonly computeUnits: number
}

export type Slot =
  | { readonly call: Call; readonly intercepted: boolean }
  /** Refused up front: -32600 (envelope), -32601 (method), -32003 (scope, allowlists). */
  | { readonly id: JsonRpcId; readonly error: JsonRpcErrorObject; readonly call?: undefined }

export type Admission =
  /** The request as a whole: an empty batch, or one over the limit. */
  | { readonly ok: false; readonly error: HalyardError }
  | {
      readonly ok: true
      readonly batch: boolean
      readonly slots: readonly Slot[]
      /** Summed over the calls to run (intercepted ones are charged by whoever answers them). */
      readonly computeUnits: number
      /** How many calls will run (not refused, not intercepted). */
      readonly runnable: number
      /** The metric label: the method's (bounded: "other" outside the registry's rows), or "batch". */
      readonly metricMethod: string
    }

export interface AdmissionContext {
  readonly network: Network
  readonly caller: Caller
  readonly maxBatch: number
  /** Calls the surface answers itself (WebSocket subscriptions): not run, not counted. */
  readonly intercept?: (spec: MethodSpec) => boolean
  /** The surface's methods (the paymaster's); the network kind's registry by default. */
  readonly registry?: MethodRegistry
}

/**
 * One call: the method as the network serves it (-32601), the access decision for it (-32003:
 * scope, the key's allowed methods and contracts), its cost.
 */
function admitCall(
  network: Network,
  caller: Caller,
  request: JsonRpcRequest,
  registry: MethodRegistry = registries[network.kind],
): { call: Call; error?: undefined } | { error: JsonRpcErrorObject; call?: undefined } {
  const found = registry.lookup(network, request.method)
  if (!found.ok) return { error: found.error }
  const spec = found.spec
  // The access decision's call stage: the method's scope, operator controls, the key's allowed
  // methods and contracts.
  const refused = decideCall({
    caller,
    method: request.method,
    scope: spec.scope,
    operatorOnly: spec.access === 'operator',
    params: request.params,
  })
  if (refused) return { error: refusalRpcError(refused) }
  return { call: { request, spec, computeUnits: spec.cost(request.params) } }
}

/** A parsed body (a request object or a batch array; anything else is refused per call) → slots, cost and label. */
export function admit(body: unknown, x: AdmissionContext): Admission {
  const batch = Array.isArray(body)
  const items: readonly unknown[] = batch ? body : [body]
  if (items.length === 0) return { ok: false, error: invalidRequest('batch is empty') }
  if (items.length > x.maxBatch)
    return { ok: false, error: invalidRequest(`batch has ${items.length} calls; the limit is ${x.maxBatch}`) }

  const slots: Slot[] = []
  let computeUnits = 0
  let runnable = 0
  for (const item of items) {
    const env = parseEnvelope(item)
    if (!env.ok) {
      slots.push({ id: env.id, error: { code: RPC_INVALID_REQUEST, message: env.message } })
      continue
    }
    const admitted = admitCall(x.network, x.caller, env.request, x.registry)
    if (admitted.error) {
      slots.push({ id: env.request.id, error: admitted.error })
      continue
    }
    const intercepted = x.intercept?.(admitted.call.spec) ?? false
    slots.push({ call: admitted.call, intercepted })
    if (intercepted) continue
    computeUnits += admitted.call.computeUnits
    runnable++
  }
  return {
    ok: true,
    batch,
    slots,
    computeUnits,
    runnable,
    metricMethod: batch
      ? 'batch'
      : (slots[0]?.call?.spec.label ?? labelOf(x.registry ?? registries[x.network.kind], body)),
  }
}

/** A refused single call's metric label; unknown names would make unbounded series and count as "other". */
function labelOf(registry: MethodRegistry, body: unknown): string {
  const method = (body as { method?: unknown } | null)?.method
  if (typeof method !== 'string') return 'other'
  return registry.describe(method)?.label ?? 'other'
}
