import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance } from 'fastify'
import { errorBody, HalyardError } from '../errors.ts'
import type { Charger } from './charge.ts'

/** Longest path parameter the router accepts (a key id, an address, a token id…). */
export const MAX_PARAM_LENGTH = 200

/**
 * The one place errors become HTTP responses. HalyardErrors carry their code; framework
 * errors (bad JSON, body too large, wrong content type) become 400s naming the problem;
 * anything else is a 500 without internals, logged with the request id.
 */
export function installErrorHandling(app: FastifyInstance, charger: Charger, bodyLimit: number) {
  app.setErrorHandler(async (error: FastifyError | HalyardError | Error, request, reply) => {
    const mapped = toHalyardError(error, bodyLimit)
    if (mapped.status >= 500) request.log.error({ err: error }, 'request failed')
    if (mapped.code !== 'rate_limited') await charger.headersForError(request, reply)
    return reply.status(mapped.status).headers(mapped.headers).send(errorBody(mapped))
  })

  app.setNotFoundHandler(async (request, reply) => {
    const err = new HalyardError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)
    return reply.status(404).send(errorBody(err))
  })
}

export function toHalyardError(error: unknown, bodyLimit: number): HalyardError {
  if (error instanceof HalyardError) return error
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

/**
 * Requests too broken to reach the router (a bad method or header, a bad Content-Length or
 * chunk size, headers over the size limit) still get the error body, on a connection that is
 * then closed: the stream cannot be trusted past the error.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  // Mid-response (a pipelined request after one being answered): an error written now would
  // land inside that answer's body; the connection is cut instead.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (inFlight?.headersSent) {
    socket.destroy()
    return
  }
  const message = CLIENT_ERRORS[err.code ?? ''] ?? `malformed HTTP request (${err.code ?? 'parse error'})`
  endWithError(socket, new HalyardError('invalid_request', message))
}

const CLIENT_ERRORS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'request headers exceed the size limit',
  ERR_HTTP_REQUEST_TIMEOUT: 'the request did not arrive in time',
  HPE_INVALID_METHOD: 'unknown HTTP method',
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
