import { type JsonRpcErrorObject, RPC_INTERNAL_ERROR, RpcError } from '../jsonrpc.ts'
import { UpstreamError } from './http-upstream.ts'

/** What kept a network's upstreams from answering, in words a client may see. */
export type UpstreamProblem =
  | 'unreachable'
  | 'timeout'
  | 'http_error'
  | 'invalid_response'
  | 'rate_limited'
  | 'wrong_chain'
  | 'not_verified'
  | 'error_answer'

const WORDING: Record<Exclude<UpstreamProblem, 'unreachable' | 'error_answer'>, string> = {
  timeout: 'timed out',
  http_error: 'answered an HTTP error',
  invalid_response: 'answered an invalid response',
  rate_limited: 'rate-limited by the node',
  wrong_chain: 'the node serves another chain',
  not_verified: 'no upstream has passed its health check yet',
}

/** Connection error codes a client may be told (they name no host, path or internal). */
const CONNECT_WORDING: ReadonlyMap<string, string> = new Map([
  ['ECONNREFUSED', 'connection refused'],
  ['ECONNRESET', 'connection reset'],
  ['ENOTFOUND', 'host not found'],
  ['EAI_AGAIN', 'host not found'],
  ['EHOSTUNREACH', 'host unreachable'],
  ['ENETUNREACH', 'network unreachable'],
  ['UND_ERR_CONNECT_TIMEOUT', 'connect timed out'],
  ['UND_ERR_SOCKET', 'connection closed'],
])

/** What a read adds to an upstream failure: the wire method, and the node's own error. */
export interface UpstreamFailureContext {
  /** The JSON-RPC method that failed (absent when the pool refused before any method ran). */
  method?: string | undefined
  /** For `error_answer`: the node's JSON-RPC error, unchanged (its code, message and data). */
  node?: JsonRpcErrorObject | undefined
}

/**
 * The one error for "the node failed": no upstream of a network gave a usable answer, a node
 * answered a read with a JSON-RPC error (`error_answer`, the node's error in `node`), or its
 * answer had the wrong shape (`invalid_response`, the zod error as `cause`). `problem` is the
 * stable string code (`code` stays the JSON-RPC -32603 it inherits as an RpcError). On
 * JSON-RPC it is the -32603 error it always was (its message, for the operator's logs and /rpc,
 * names upstreams and causes); REST routes get `publicMessage` (src/http/errors.ts), which
 * names the network and the kind of failure and nothing else.
 */
export class UpstreamUnavailableError extends RpcError {
  readonly publicMessage: string
  readonly method: string | undefined
  readonly node: JsonRpcErrorObject | undefined

  constructor(
    readonly network: string,
    readonly problem: UpstreamProblem,
    message: string,
    /** For `error_answer`, `unreachable`: what the client is told beyond the problem. */
    readonly detail?: string,
    cause?: unknown,
    context: UpstreamFailureContext = {},
  ) {
    super(RPC_INTERNAL_ERROR, message)
    this.name = 'UpstreamUnavailableError'
    if (cause !== undefined) this.cause = cause
    this.method = context.method
    this.node = context.node
    const what =
      problem === 'unreachable'
        ? (CONNECT_WORDING.get(detail ?? '') ?? 'connection failed')
        : problem === 'error_answer'
          ? (detail ?? 'answered an error')
          : WORDING[problem]
    this.publicMessage = `upstream for ${network} unavailable: ${what}`
  }

  /** The same failure, naming the read it failed (a pool's refusal knows no method). */
  forMethod(method: string): UpstreamUnavailableError {
    if (this.method !== undefined) return this
    return new UpstreamUnavailableError(this.network, this.problem, this.message, this.detail, this.cause, {
      method,
      node: this.node,
    })
  }
}

/** The problem an upstream's transport failure stands for. */
export function problemOf(err: UpstreamError): UpstreamProblem {
  switch (err.kind) {
    case 'connect':
      return 'unreachable'
    case 'timeout':
      return 'timeout'
    case 'http':
      return 'http_error'
    case 'invalid':
      return 'invalid_response'
    case 'rate_limited':
      return 'rate_limited'
  }
}

/** Why an upstream last failed, as the pool remembers it. */
export interface LastProblem {
  problem: UpstreamProblem
  errno?: string | undefined
}

/** What a failed call or probe says about its upstream (a probe's unusable answer is invalid). */
export function lastProblem(err: unknown): LastProblem {
  return err instanceof UpstreamError
    ? { problem: problemOf(err), errno: err.errno }
    : { problem: 'invalid_response' }
}

/**
 * The error of a call no upstream answered: after transport failures, the first one's problem;
 * with no upstream to try, the reason the first one is out of service.
 */
export function noUpstreamError(
  network: string,
  failures: readonly UpstreamError[],
  upstreams: readonly ({
    id: string
    chainOk: boolean | null
    lastError: string | null
  } & Partial<LastProblem>)[],
): UpstreamUnavailableError {
  const first = failures[0]
  if (first) {
    const causes = failures.map((f) => f.message).join('; ')
    return new UpstreamUnavailableError(
      network,
      problemOf(first),
      `no upstream could answer: ${causes}`,
      first.errno,
      first,
    )
  }
  const why = upstreams
    .map((u) => `${u.id}: ${u.chainOk === false ? 'wrong chain' : (u.lastError ?? 'not verified yet')}`)
    .join('; ')
  const out = upstreams.find((u) => u.chainOk === false || u.problem !== undefined)
  return new UpstreamUnavailableError(
    network,
    out?.chainOk === false ? 'wrong_chain' : (out?.problem ?? 'not_verified'),
    `no healthy upstream for ${network} before the deadline (${why})`,
    out?.errno,
  )
}

/**
 * A node's JSON-RPC error to a call a REST route depends on (eth_getCode, eth_feeHistory…): a
 * 500 that says which call failed and its code, not the node's own wording.
 */
export function upstreamAnswered(
  net: { chain: string; network: string },
  method: string,
  error: JsonRpcErrorObject,
): UpstreamUnavailableError {
  return new UpstreamUnavailableError(
    `${net.chain}/${net.network}`,
    'error_answer',
    `${method} failed: ${error.message} (${error.code})`,
    `${method} answered error ${error.code}`,
    undefined,
    { method, node: error },
  )
}

/** A node's answer to `method` that is not what the method returns. */
export function upstreamMalformed(
  net: { chain: string; network: string },
  method: string,
  /** What was wrong with it (a ZodError), for the logs. */
  cause?: unknown,
): UpstreamUnavailableError {
  return new UpstreamUnavailableError(
    `${net.chain}/${net.network}`,
    'invalid_response',
    `${method} returned a malformed answer`,
    undefined,
    cause,
    { method },
  )
}
