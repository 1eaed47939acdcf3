/** JSON-RPC 2.0 wire types and the error codes Halyard answers with. */
export type JsonRpcId = string | number | null

export interface JsonRpcRequest {
  jsonrpc: '2.0'
  id: JsonRpcId
  method: string
  params: unknown[]
}

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

/** What one call produced: the upstream's result or its error, passed through unchanged. */
export type RpcOutcome =
  | { result: unknown; error?: undefined }
  | { error: JsonRpcErrorObject; result?: undefined }

export type JsonRpcResponse = { jsonrpc: '2.0'; id: JsonRpcId } & RpcOutcome

export const RPC_INVALID_REQUEST = -32600
export const RPC_METHOD_NOT_FOUND = -32601
export const RPC_INVALID_PARAMS = -32602
export const RPC_INTERNAL_ERROR = -32603
/** Halyard-specific: a limit (range, result size, subscriptions) was exceeded. */
export const RPC_LIMIT_EXCEEDED = -32005

/** A method-level failure: becomes a JSON-RPC `error` object in an HTTP 200 response. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
    this.name = 'RpcError'
  }

  toObject(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

export function toResponse(id: JsonRpcId, outcome: RpcOutcome): JsonRpcResponse {
  return outcome.error !== undefined
    ? { jsonrpc: '2.0', id, error: outcome.error }
    : { jsonrpc: '2.0', id, result: outcome.result }
}
