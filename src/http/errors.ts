import { type IncomingMessage, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance } from 'fastify'
import { UpstreamUnavailableError } from '../chains/upstream-unavailable.ts'
import { errorBody, HalyardError } from '../errors.ts'
import { redactUrl } from '../logger.ts'
import { DatabaseUnavailableError } from '../storage/pg-pool.ts'
import type { Charger } from './charge.ts'
import { newRequestId } from './request-id.ts'

/** Longest path parameter the router accepts (a key id, an address, a token id…). */
export const MAX_PARAM_LENGTH = 200

/**
 * The one place errors become HTTP responses. HalyardErrors carry their code; framework
 * errors (bad JSON, body too large, wrong content type) become 400s naming the problem;
 * anything else is a 500 without internals, logged with the request id.
 */
export function installErrorHandling(app: FastifyInstance, charger: Charger, bodyLimit: number) {
  app.setErrorHandler(async (error: FastifyError | HalyardError | Error, request, reply) => {
    // A route may have a smaller limit than the app's (the dashboard's forms): name the one that applied.
    const mapped = toHalyardError(error, request.routeOptions.bodyLimit ?? bodyLimit)
    if (logsAsFailure(mapped)) request.log.error({ err: error }, 'request failed')
    // A request that never arrived whole and whose connection is gone (its body cut at the
    // deadline, or the client left mid-body) was never served: not counted against the account.
    if (!request.raw.complete && request.raw.socket.destroyed)
      return reply.status(mapped.status).send(errorBody(mapped))
    if (mapped.code !== 'rate_limited' && mapped.code !== 'service_unavailable')
      await charger.headersForError(request, reply)
    return reply.status(mapped.status).headers(mapped.headers).send(errorBody(mapped))
  })

  app.setNotFoundHandler(async (request, reply) => {
    const path = redactUrl(request.url.split('?')[0] ?? '')
    const err = new HalyardError('not_found', `no route ${request.method} ${path}`)
    return reply.status(404).send(errorBody(err))
  })
}

export function toHalyardError(error: unknown, bodyLimit: number): HalyardError {
  if (error instanceof HalyardError) return error
  // Still a 500, but one that says which network's upstream failed and how.
  if (error instanceof UpstreamUnavailableError)
    return new HalyardError('internal_error', error.publicMessage)
  if (error instanceof DatabaseUnavailableError)
    return new HalyardError('service_unavailable', 'the database is unavailable; retry shortly', {
      'retry-after': '1',
    })
  const e = error as FastifyError
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HalyardError('invalid_request', `request body exceeds the ${bodyLimit}-byte limit`)
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HalyardError('invalid_request', 'request body is empty; expected JSON')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HalyardError('invalid_request', 'Content-Type must be application/json')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HalyardError('invalid_request', 'Content-Length does not match the body')
    case 'FST_ERR_VALIDATION':
      return new HalyardError('invalid_request', e.message)
    // The router's own refusals (through `frameworkErrors`): the path is not repeated back.
    case 'FST_ERR_BAD_URL':
      return new HalyardError('invalid_request', 'the URL path is not valid percent-encoding')
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HalyardError('invalid_request', `a path parameter exceeds ${MAX_PARAM_LENGTH} characters`)
  }
  if (e instanceof SyntaxError || (e.statusCode === 400 && /JSON/i.test(e.message))) {
    return new HalyardError('invalid_request', `malformed JSON body: ${e.message}`)
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new HalyardError(e.statusCode === 404 ? 'not_found' : 'invalid_request', e.message)
  }
  return new HalyardError('internal_error', 'internal error; retry with exponential backoff')
}

/** Request ids by raw request (genReqId), for answers written on the socket past Fastify. */
const requestIds = new WeakMap<IncomingMessage, string>()

export function rememberRequestId(req: IncomingMessage, id: string): void {
  requestIds.set(req, id)
}

const requestIdOf = (req: IncomingMessage | undefined) => (req && requestIds.get(req)) ?? newRequestId()

/**
 * Requests too broken to reach the router (a bad method or header, a bad Content-Length or
 * chunk size, headers over the size limit) and requests cut at the deadline (headers or body
 * still arriving after HALYARD_REQUEST_TIMEOUT) still get the error body and an X-Request-Id (the
 * request's own when it had reached Fastify), on a connection that is then closed: the stream
 * cannot be trusted past the error.
 *
 * Decision: the deadline answer is 400 invalid_request, not 408: the error table (docs/concepts.md) pairs
 * invalid_request with 400 only (and `status` must equal the HTTP status); what failed is the
 * request itself, which never arrived whole. It is not charged (installErrorHandling).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  // Mid-response (a pipelined request after one being answered): an error written now would
  // land inside that answer's body; the connection is cut instead.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean; req?: IncomingMessage } })
    ._httpMessage
  if (inFlight?.headersSent) {
    socket.destroy()
    return
  }
  const message = CLIENT_ERRORS[err.code ?? ''] ?? `malformed HTTP request (${err.code ?? 'parse error'})`
  endWithError(socket, new HalyardError('invalid_request', message), {
    'x-request-id': requestIdOf(inFlight?.req),
  })
}

const CLIENT_ERRORS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'request headers exceed the size limit',
  ERR_HTTP_REQUEST_TIMEOUT: "the request (headers and body) did not arrive within the server's deadline",
  HPE_INVALID_METHOD: 'unknown HTTP method',
  HPE_INVALID_HEADER_TOKEN: 'a request header name or value holds a character HTTP does not allow',
}

/** CONNECT (the server's 'connect' event): Halyard is not a proxy; answered, then closed. */
export function answerConnect(req: IncomingMessage, socket: Duplex): void {
  endWithError(
    socket,
    new HalyardError('invalid_request', 'CONNECT is not supported: Halyard is not a proxy'),
    {
      'x-request-id': requestIdOf(req),
    },
  )
}

/**
 * Answers on a raw socket (no Fastify reply: a protocol error, a refused WebSocket upgrade)
 * with the error body, then closes it. Destroyed once written: a client that never closes its
 * side must not keep the socket.
 */
export function endWithError(socket: Duplex, e: HalyardError, headers: Record<string, string> = {}): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const body = JSON.stringify(errorBody(e))
  const head = Object.entries({
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...headers,
    ...e.headers,
  })
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')
  socket.end(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\n${head}\r\n\r\n${body}`, () =>
    socket.destroy(),
  )
}

/**
 * Whether an error answer is logged per request: server errors are, except a dependency's
 * outage (503), which its watcher logs once when it begins and ends and metrics count
 * (docs/dependency-failures.md).
 */
export function logsAsFailure(e: HalyardError): boolean {
  return e.status >= 500 && e.code !== 'service_unavailable'
}
