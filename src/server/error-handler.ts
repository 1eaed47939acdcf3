import type { FastifyError, FastifyInstance } from 'fastify'
import { errorBody, HalyardError } from '../errors.ts'
import type { Charger } from './charge.ts'

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
  }
  if (e instanceof SyntaxError || (e.statusCode === 400 && /JSON/i.test(e.message))) {
    return new HalyardError('invalid_request', `malformed JSON body: ${e.message}`)
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new HalyardError(e.statusCode === 404 ? 'not_found' : 'invalid_request', e.message)
  }
  return new HalyardError('internal_error', 'internal error; retry with exponential backoff')
}
