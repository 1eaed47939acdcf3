import type { FastifyInstance, FastifyRequest, onErrorHookHandler, onResponseHookHandler } from 'fastify'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { toHalyardError } from '../http/errors.ts'
import type { RequestRecorder } from './recorder.ts'

/**
 * How the JSON-RPC surfaces find the request explorer's recorder: registered on the app once
 * (requests/register.ts), before any JSON-RPC route is defined, so every surface (the gateway,
 * the Alchemy-compatible root, the bundler's and the paymaster's) records without each being
 * handed it.
 */
export interface Recording {
  readonly recorder: RequestRecorder
  /** Names the network of a request refused before the gate resolved it (a body that is no JSON). */
  readonly networks: NetworkRegistry
}

const recorders = new WeakMap<FastifyInstance, Recording>()

export function setRequestRecorder(app: FastifyInstance, recording: Recording): void {
  recorders.set(app, recording)
}

export function requestRecorderOf(app: FastifyInstance): Recording | undefined {
  return recorders.get(app)
}

/** The gate's network, or the one a `…/:chain/:network` path names when the gate never ran. */
function networkOf(request: FastifyRequest, networks: NetworkRegistry): Network | undefined {
  if (request.network) return request.network
  const p = request.params as { chain?: string; network?: string } | undefined
  if (typeof p?.chain !== 'string' || typeof p.network !== 'string') return undefined
  try {
    return networks.get(p.chain, p.network)
  } catch {
    return undefined
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The error a JSON-RPC route answered with, for the request explorer. */
    rpcFailure?: unknown
  }
}

/**
 * The Fastify route's side (the fast lane records in rpc/fast-lane.ts): every answer of a caller
 * whose key and network are known, refusals by the gate included (an origin or IP not on the
 * key's allowlists, scope, 429): "why did my call fail" is what the explorer is for. A request
 * refused before its key is known (401) belongs to no account and is not recorded.
 */
export function recordingHooks(
  { recorder, networks }: Recording,
  surface: string,
): { onResponse: onResponseHookHandler; onError: onErrorHookHandler } {
  return {
    onError: (request, _reply, error, done) => {
      request.rpcFailure = error
      done()
    },
    onResponse: (request, reply, done) => {
      const caller = request.caller
      const network = caller ? networkOf(request, networks) : undefined
      if (caller && network) {
        const kept = request.rpcAnswer
        const failure = request.rpcFailure
        const body = request.body
        recorder.record({
          at: Date.now() - reply.elapsedTime,
          caller,
          surface,
          network,
          requestId: request.id,
          status: reply.statusCode,
          latencyMs: reply.elapsedTime,
          origin: request.headers.origin,
          body,
          batch: Array.isArray(body),
          slots: kept?.admission.slots,
          codes: kept?.codes,
          answer: reply.statusCode < 400 ? kept?.text : undefined,
          error:
            failure === undefined
              ? undefined
              : toHalyardError(failure, request.routeOptions.bodyLimit ?? 0).message,
        })
      }
      done()
    },
  }
}
