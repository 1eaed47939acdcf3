import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { AuthService } from '../auth/service.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import { errorBody } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import { logsAsFailure, rememberRequestId, toHalyardError } from './errors.ts'
import type { ClientAddress } from './peer.ts'
import { newRequestId, safeRequestId } from './request-id.ts'

/**
 * The fast lane: a route may answer its commonest requests on the raw `node:http` request,
 * before Fastify's generic machinery (router, hooks, content-type parsing, reply objects). A
 * lane takes a request only when everything the gate would check is already known to pass from
 * the headers alone (a key resolved within the last second, the network, the scope); anything
 * else — a first sight of a key, a chunked body, a query string — goes to Fastify unchanged,
 * so every refusal keeps its one writer there. bench:rpc measured the lane.
 *
 * What a lane answers must be what the Fastify route would answer: the JSON-RPC lane and its
 * route share the endpoint (rpc/endpoint.ts), the charger and the metric series, and the
 * hostile-input sweep and the RPC tests run through both (see rpc/fast-lane.test.ts).
 */
export type FastLane = (req: IncomingMessage, res: ServerResponse) => boolean

export interface FastLaneHost {
  readonly lanes: FastLane[]
  readonly auth: AuthService
  readonly networks: NetworkRegistry
  /** The client's address for the allowed-IPs list (http/peer.ts). */
  readonly clientAddress: ClientAddress
  readonly bodyLimit: number
  readonly workerIndex: string | undefined
  /** Fastify's own JSON parser (prototype poisoning refused), so both paths parse alike. */
  readonly parseJson: (text: string) => unknown
  readonly metrics: Metrics
  readonly logger: Logger
}

const hosts = new WeakMap<FastifyInstance, FastLaneHost>()

export function setFastLaneHost(app: FastifyInstance, host: FastLaneHost): void {
  hosts.set(app, host)
}

export function fastLaneHost(app: FastifyInstance): FastLaneHost | undefined {
  return hosts.get(app)
}

/**
 * The request id Fastify's genReqId would give: the client's when safe, remembered so that a
 * socket-level error answer (a body cut at the deadline) echoes it. A generated one is never
 * remembered: nobody has seen it yet, and the WeakMap entry showed in the RPC profile.
 */
export function requestIdFor(req: IncomingMessage): string {
  const given = safeRequestId(req.headers['x-request-id'])
  if (given === undefined) return newRequestId()
  rememberRequestId(req, given)
  return given
}

/**
 * Reads a body whose Content-Length the lane has already checked against the limit, then calls
 * `done` with its text. A client that goes away first never gets `done` called: nothing was
 * charged or counted yet, so there is nothing to answer or undo, and the listeners go with the
 * request (an aborted request emits 'close', not 'end'; its 'error' only to a listener of its
 * own, so none is added). Bytes past the declared length are dropped (Node's parser refuses them
 * on its own; this is the second line). Callbacks, not a promise: a cached answer needs none.
 */
export function onBody(req: IncomingMessage, length: number, done: (text: string) => void): void {
  const body = new Body(length, done)
  req.on('data', (chunk: Buffer) => body.add(chunk))
  req.on('end', () => body.end())
}

// A class, not closures over locals: the loader (tsx) names each named closure with a
// `defineProperty` call per request, which the RPC profile showed (`__name`).
class Body {
  private first: Buffer | undefined
  private more: Buffer[] | undefined
  private size = 0

  constructor(
    private readonly length: number,
    private readonly done: (text: string) => void,
  ) {}

  add(chunk: Buffer): void {
    this.size += chunk.length
    if (this.size > this.length) return
    if (this.first === undefined) this.first = chunk
    else if (this.more === undefined) this.more = [this.first, chunk]
    else this.more.push(chunk)
  }

  end(): void {
    const { first, more } = this
    this.done(more ? Buffer.concat(more).toString('utf8') : first ? first.toString('utf8') : '')
  }
}

/** Writes a whole answer: status, headers and body in one `end`. */
export function writeAnswer(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string,
): void {
  if (res.destroyed || res.headersSent) return
  headers['content-length'] = String(Buffer.byteLength(body))
  res.writeHead(status, headers)
  res.end(body)
}

/**
 * The error answer of the lane: the same mapping and body as Fastify's error handler
 * (http/errors.ts), with the headers the caller has collected (request id, rate limits).
 */
export function writeLaneError(
  host: FastLaneHost,
  res: ServerResponse,
  err: unknown,
  headers: Record<string, string>,
  requestId: string,
): number {
  const mapped = toHalyardError(err, host.bodyLimit)
  if (logsAsFailure(mapped)) host.logger.error({ err, reqId: requestId }, 'request failed')
  Object.assign(headers, mapped.headers)
  headers['content-type'] = 'application/json; charset=utf-8'
  writeAnswer(res, mapped.status, headers, JSON.stringify(errorBody(mapped)))
  return mapped.status
}
