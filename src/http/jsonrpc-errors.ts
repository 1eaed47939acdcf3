import { HalyardError } from '../errors.ts'
import {
  type JsonRpcErrorObject,
  RPC_INTERNAL_ERROR,
  RPC_INVALID_PARAMS,
  RpcError,
  type RpcOutcome,
} from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'

/**
 * The one place a failure becomes a JSON-RPC error object (the JSON-RPC twin of errors.ts,
 * which turns failures into HTTP answers). Every JSON-RPC surface funnels through it: the proxy
 * (/v1/rpc and WebSocket, rpc/service.ts), the bundler and paymaster endpoints, the Alchemy root.
 * In order:
 * - an RpcError (a method's own refusal, an upstream failure) keeps its code, message and data,
 *   unless the surface answers those as internal (`rpcErrors: 'internal'`);
 * - a feature's failure that knows its JSON-RPC answer (`JsonRpcAnswerable`: the bundler's
 *   ERC-7769 codes, sponsorship refusals with their rule) answers with it; one that is -32603
 *   (a node call failed) is logged as a warning;
 * - a client mistake (HalyardError invalid_request / not_found) is -32602 with its message;
 * - anything else is logged and answered -32603 "internal error", without internals.
 */

/** A feature's failure that knows the JSON-RPC error object it answers with. */
export interface JsonRpcAnswerable {
  jsonRpcError(): JsonRpcErrorObject
}

export interface JsonRpcErrorScope {
  /** Where failures are logged; none where the caller logs them itself. */
  readonly logger?: Logger | undefined
  /** What failed, for the log line (a method, a surface). */
  readonly what: string
  /** Extra fields of the log line (network, method). */
  readonly fields?: Readonly<Record<string, unknown>>
  /**
   * How an RpcError is answered: passed on (the default: the proxy and the Alchemy root relay
   * what the node said), or as any unexpected failure (the bundler's and paymaster's own
   * methods, whose node failures are not the caller's to read).
   */
  readonly rpcErrors?: 'pass' | 'internal'
}

/** -32603 without internals; `message` for a surface that adds advice (WebSocket: "retry shortly"). */
export function internalJsonRpcError(message = 'internal error'): JsonRpcErrorObject {
  return { code: RPC_INTERNAL_ERROR, message }
}

function answerable(err: unknown): err is JsonRpcAnswerable & Error {
  return err instanceof Error && typeof (err as Partial<JsonRpcAnswerable>).jsonRpcError === 'function'
}

export function toJsonRpcError(err: unknown, scope: JsonRpcErrorScope): JsonRpcErrorObject {
  if (err instanceof RpcError && scope.rpcErrors !== 'internal') return err.toObject()
  if (answerable(err)) {
    const error = err.jsonRpcError()
    if (error.code === RPC_INTERNAL_ERROR)
      scope.logger?.warn({ err: err.message, ...scope.fields }, `${scope.what}: node call failed`)
    return error
  }
  if (err instanceof HalyardError && (err.code === 'invalid_request' || err.code === 'not_found'))
    return { code: RPC_INVALID_PARAMS, message: err.message }
  scope.logger?.error({ err, ...scope.fields }, `${scope.what} failed unexpectedly`)
  return internalJsonRpcError()
}

/** Runs a method's body: its result, or what it threw as the funnel answers it. */
export async function answerJsonRpc(
  scope: JsonRpcErrorScope,
  body: () => Promise<unknown>,
): Promise<RpcOutcome> {
  try {
    return { result: await body() }
  } catch (err) {
    return { error: toJsonRpcError(err, scope) }
  }
}
