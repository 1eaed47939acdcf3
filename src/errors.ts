/**
 * Errors are values with stable codes. Services throw `HalyardError`; the HTTP layer
 * (src/http/errors.ts) and the JSON-RPC layer (src/jsonrpc.ts) map them to the
 * wire in one place each.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  rate_limited: 429,
  internal_error: 500,
  // A dependency (the database, or Redis with rate limits failing closed) cannot answer now;
  // carries Retry-After (docs/dependency-failures.md).
  service_unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export class HalyardError extends Error {
  readonly code: ErrorCode
  readonly status: number
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers: Readonly<Record<string, string>>

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.name = 'HalyardError'
    this.code = code
    this.status = ERROR_STATUS[code]
    this.headers = headers
  }
}

export const invalidRequest = (message: string) => new HalyardError('invalid_request', message)
export const unauthorized = (message: string) => new HalyardError('unauthorized', message)
export const forbidden = (message: string) => new HalyardError('forbidden', message)
export const notFound = (message: string) => new HalyardError('not_found', message)

/** Body shape of every error response (docs/concepts.md). */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; status: number }
}

export function errorBody(err: HalyardError): ErrorBody {
  return { error: { code: err.code, message: err.message, status: err.status } }
}
