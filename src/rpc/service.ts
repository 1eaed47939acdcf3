import { scopeForRpcMethod } from '../auth/scopes.ts'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { evmMethodCost, solanaMethodCost } from '../limits/compute-units.ts'
import type { Metrics } from '../server/metrics.ts'
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
 * The proxy's logic, shared by HTTP and WebSocket: admission (method policy, scope, cost)
 * and execution against the network's upstream pool.
 */
export class RpcService {
  constructor(private readonly metrics: Metrics) {}

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

  async execute(network: Network, request: JsonRpcRequest): Promise<RpcOutcome> {
    let outcome: RpcOutcome
    try {
      outcome = await network.pool.call(request.method, request.params)
    } catch (err) {
      const error =
        err instanceof RpcError ? err.toObject() : { code: RPC_INTERNAL_ERROR, message: 'internal error' }
      outcome = { error }
    }
    this.metrics.rpcCalls.inc({
      network: network.slug,
      method: request.method,
      outcome: outcome.error ? 'error' : 'ok',
    })
    return outcome
  }
}
