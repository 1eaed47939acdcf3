import { ERROR_STATUS, type ErrorCode } from '../errors.ts'
import type { ResponseHeader, RouteMeta } from '../http/route-meta.ts'

/**
 * The responses every operation shares (src/openapi/document.ts builds the operations): the
 * error responses by code, and the headers of success answers.
 */

const rateLimitHeaders = {
  'X-RateLimit-Limit': {
    description: 'Requests per second of the plan',
    required: true,
    schema: { type: 'integer' },
    example: 25,
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in this second',
    required: true,
    schema: { type: 'integer' },
    example: 24,
  },
  'X-RateLimit-Reset': {
    description: 'Unix seconds when the window resets',
    required: true,
    schema: { type: 'integer' },
    example: 1767225600,
  },
}

const requestIdHeader = {
  'X-Request-Id': {
    description:
      "The request's id (the client's X-Request-Id when it sent a usable one); quote it in reports",
    schema: { type: 'string' },
    example: '0f6c2a8e-3b1d-4c55-9a7e-2d4b8f1e6a90',
  },
}

/** A route's own header as an OpenAPI header object. */
function headerObject(h: ResponseHeader): Record<string, unknown> {
  return {
    description: h.description,
    required: h.always,
    schema: { type: h.type, ...(h.enum ? { enum: [...h.enum] } : {}) },
    example: h.example,
  }
}

/** The headers a success answer of this route carries. */
export function successHeaders(meta: RouteMeta): Record<string, unknown> {
  const own = Object.fromEntries(Object.entries(meta.responseHeaders).map(([n, h]) => [n, headerObject(h)]))
  if (meta.access === 'public') return { ...requestIdHeader, ...own }
  return { ...requestIdHeader, ...rateLimitHeaders, ...own }
}

const ERROR_TEXT: Record<ErrorCode, string> = {
  invalid_request: 'Malformed input; the message names the parameter',
  unauthorized: 'Missing or invalid API key',
  forbidden: 'The key lacks the scope, or a test key asked for a mainnet network',
  not_found: 'The network or resource does not exist',
  rate_limited: 'A rate limit was exceeded; retry after Retry-After seconds',
  internal_error: 'Server error; retry with exponential backoff',
  service_unavailable:
    'A dependency cannot answer now (the database, or Redis with rate limits failing closed); retry after Retry-After seconds',
}

/** A message each error code may carry, for the examples of the error responses. */
const ERROR_EXAMPLE: Record<ErrorCode, string> = {
  invalid_request: 'limit must be an integer between 1 and 100 (got 500)',
  unauthorized: 'missing API key: send it in the X-API-Key header or as Authorization: Bearer <key>',
  forbidden: 'this API key lacks the webhooks:manage scope required for webhooks',
  not_found: 'webhook wh_0123456789abcdef01234567 not found',
  rate_limited: 'rate limit exceeded: 10 requests per second',
  internal_error: 'internal error (request id 0f6c2a8e-3b1d-4c55-9a7e-2d4b8f1e6a90)',
  service_unavailable: 'the database is not answering',
}

export function errorResponses(): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const contentOf = (code: ErrorCode) => ({
    'application/json': {
      schema: { $ref: '#/components/schemas/Error' },
      example: { error: { code, message: ERROR_EXAMPLE[code], status: ERROR_STATUS[code] } },
    },
  })
  for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
    out[code] = { description: ERROR_TEXT[code], content: contentOf(code) }
  }
  out.rate_limited = {
    description: ERROR_TEXT.rate_limited,
    headers: {
      'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer', minimum: 1 } },
      ...rateLimitHeaders,
    },
    content: contentOf('rate_limited'),
  }
  out.service_unavailable = {
    description: ERROR_TEXT.service_unavailable,
    headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer', minimum: 1 } } },
    content: contentOf('service_unavailable'),
  }
  return out
}

/** The error responses an operation may give, by status. */
export function errorsFor(meta: RouteMeta, hasPathParams: boolean): Record<string, unknown> {
  const ref = (code: ErrorCode) => ({ $ref: `#/components/responses/${code}` })
  const keyed = meta.access !== 'public'
  const out: Record<string, unknown> = {}
  // Every route can get a malformed request (bad percent-encoding, a body it cannot parse).
  out['400'] = ref('invalid_request')
  if (keyed) {
    out['401'] = ref('unauthorized')
    out['403'] = ref('forbidden')
  }
  if (hasPathParams || meta.network) out['404'] = ref('not_found')
  if (keyed) out['429'] = ref('rate_limited')
  out['500'] = ref('internal_error')
  out['503'] = ref('service_unavailable')
  return out
}
