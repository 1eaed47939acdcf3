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

export const RPC_PARSE_ERROR = -32700
export const RPC_INVALID_REQUEST = -32600
export const RPC_METHOD_NOT_FOUND = -32601
export const RPC_INVALID_PARAMS = -32602
export const RPC_INTERNAL_ERROR = -32603
/** Halyard-specific: a limit (range, result size, subscriptions) was exceeded. */
export const RPC_LIMIT_EXCEEDED = -32005
/** A request was refused by a rate limit (the same code); `data.retryAfter` says when to try again. */
export const RPC_RATE_LIMITED = RPC_LIMIT_EXCEEDED
/** Halyard-specific: a call the key's scopes do not allow (inside a batch or over WebSocket). */
export const RPC_FORBIDDEN = -32003

/** A method-level failure: becomes a JSON-RPC `error` object in an HTTP 200 response. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    opts?: { cause?: unknown },
  ) {
    super(message, opts)
    this.name = 'RpcError'
  }

  toObject(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}
