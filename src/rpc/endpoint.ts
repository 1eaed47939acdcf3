import type { Caller } from '../auth/service.ts'
import { RawResult } from '../chains/raw-answer.ts'
import type { Network } from '../chains/registry.ts'
import { forbidden, invalidRequest } from '../errors.ts'
import type { Charger } from '../http/charge.ts'
import type { RouteContext } from '../http/route.ts'
import { type JsonRpcId, RPC_INVALID_REQUEST, RPC_METHOD_NOT_FOUND } from '../jsonrpc.ts'
import type { RequestRecorder } from '../requests/recorder.ts'
import { type Admission, admit, type Slot } from './admission.ts'
import { errorFrame, hitFrame } from './envelope.ts'
import type { MethodRegistry } from './methods/spec.ts'
import type { Execution, RpcService } from './service.ts'

/** Says whether the cache answered: HIT, MISS, PARTIAL (batch); absent when nothing was cacheable. */
export const CACHE_HEADER = 'x-cache'

export interface EndpointDeps {
  readonly rpc: RpcService
  readonly charger: Charger
  readonly maxBatch: number
  /** The surface's methods (the paymaster's); the network kind's registry by default. */
  readonly registry?: MethodRegistry
  /** The request explorer's recorder (src/requests), when recording is on. */
  readonly recorder?: RequestRecorder | undefined
}

/** An HTTP JSON-RPC request admitted: what to run, its cost and its metric label. */
export type HttpAdmission = Extract<Admission, { ok: true }>

/**
 * The admission (rpc/admission.ts) mapped onto HTTP. Problems with the request itself are HTTP
 * errors (an empty or oversized batch, a single call's bad envelope 400, a single call the key
 * may not make 403); a method-level refusal is a 200 with the JSON-RPC error.
 */
export function admitHttp(
  deps: EndpointDeps,
  caller: Caller,
  network: Network,
  body: unknown,
): HttpAdmission {
  const admission = admit(body, {
    network,
    caller,
    maxBatch: deps.maxBatch,
    ...(deps.registry ? { registry: deps.registry } : {}),
  })
  if (!admission.ok) throw admission.error
  const first = admission.slots[0]!
  if (!admission.batch && !first.call) {
    if (first.error.code === RPC_INVALID_REQUEST) throw invalidRequest(first.error.message)
    if (first.error.code !== RPC_METHOD_NOT_FOUND) throw forbidden(first.error.message)
  }
  return admission
}

/** The answer's text and the X-Cache value (absent when nothing was cacheable). */
export interface HttpAnswer {
  readonly text: string
  readonly cache: 'HIT' | 'MISS' | 'PARTIAL' | undefined
  /** Per item, the JSON-RPC error code of its answer; undefined when no item failed. */
  readonly codes: (number | undefined)[] | undefined
}

/**
 * Runs an admitted (and charged) request. The answer resolves at the end of the event-loop turn
 * (`endOfTurn`), so answers computed in one burst are written together.
 */
export async function answerAdmitted(
  deps: EndpointDeps,
  admission: HttpAdmission,
  network: Network,
  caller: Caller,
): Promise<HttpAnswer> {
  const seen: CacheTally = { hits: 0, misses: 0, codes: undefined }
  // A single call (most traffic) skips the batch's array and Promise.all.
  const text = admission.batch
    ? `[${(await Promise.all(admission.slots.map((slot, i) => runSlot(deps, slot, network, caller, seen, i)))).join(',')}]`
    : await runSlot(deps, admission.slots[0]!, network, caller, seen, 0)
  const { hits, misses } = seen
  const cache = hits + misses === 0 ? undefined : hits === 0 ? 'MISS' : misses === 0 ? 'HIT' : 'PARTIAL'
  await endOfTurn()
  return { text, cache, codes: seen.codes }
}

interface CacheTally {
  hits: number
  misses: number
  /** Made only when an item fails (the request explorer's status per item). */
  codes: (number | undefined)[] | undefined
}

// A module-level function, not a closure per request: the loader (tsx) names every named
// closure it creates with a defineProperty call, which the RPC profile showed.
async function runSlot(
  deps: EndpointDeps,
  slot: Slot,
  network: Network,
  caller: Caller,
  seen: CacheTally,
  index: number,
): Promise<string> {
  if (!slot.call) {
    failedAt(seen, index, slot.error.code)
    return errorFrame(slot.id, slot.error)
  }
  const { request: call, spec } = slot.call
  const r = await deps.rpc.run(network, call, spec, caller)
  if (r.cache === 'hit') seen.hits++
  else {
    if (r.cache === 'miss') seen.misses++
    if (r.outcome.error) failedAt(seen, index, r.outcome.error.code)
  }
  return serialize(call.id, r)
}

/**
 * A single call's answer from its execution, as `answerAdmitted` makes it (without waiting for
 * the end of the turn: the fast lane writes its answers there itself).
 */
export function singleAnswer(id: JsonRpcId, r: Execution): HttpAnswer {
  const code = r.outcome?.error?.code
  return {
    text: serialize(id, r),
    cache: r.cache === 'hit' ? 'HIT' : r.cache === 'miss' ? 'MISS' : undefined,
    codes: code === undefined ? undefined : [code],
  }
}

/** Notes an item's error code (the array is made at the first failure only). */
function failedAt(seen: CacheTally, index: number, code: number): void {
  seen.codes ??= []
  seen.codes[index] = code
}

/**
 * A JSON-RPC endpoint as a Fastify handler. The whole request is charged once: one request and
 * the summed CU. The fast lane (rpc/fast-lane.ts) runs the same two steps on the raw request.
 */
export function jsonRpcEndpoint(deps: EndpointDeps) {
  return async ({
    caller,
    network,
    body,
    request,
    reply,
  }: RouteContext<unknown, unknown, object, Network>) => {
    const admission = admitHttp(deps, caller, network, body)
    request.metricMethod = admission.metricMethod
    // For the request explorer's onResponse hook (requests/gateway-hooks.ts).
    const kept: RecordedAnswer | undefined = deps.recorder ? { admission } : undefined
    if (kept) request.rpcAnswer = kept
    const charged = deps.charger.charge(request, reply, admission.computeUnits)
    if (charged) await charged
    const answer = await answerAdmitted(deps, admission, network, caller)
    if (kept) {
      kept.text = answer.text
      kept.codes = answer.codes
    }
    if (answer.cache) reply.header(CACHE_HEADER, answer.cache)
    reply.header('content-type', JSON_CONTENT_TYPE)
    return answer.text
  }
}

/** What the Fastify route's handler leaves for the request explorer. */
export interface RecordedAnswer {
  readonly admission: HttpAdmission
  text?: string
  codes?: (number | undefined)[] | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the JSON-RPC endpoint when the request explorer records. */
    rpcAnswer?: RecordedAnswer
  }
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

let turn: Promise<void> | undefined

/**
 * Resolves in the check phase of the current event-loop turn, one timer for every caller. Answers
 * computed while reading a burst of requests (cache hits, or a burst of upstream replies) are
 * then written together after the reads, instead of one socket write between each read: far
 * fewer wake-ups of the clients; on loopback it nearly doubled cached throughput and halved
 * the cached median latency (bench:rpc).
 */
function endOfTurn(): Promise<void> {
  turn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turn = undefined
      resolve()
    }),
  )
  return turn
}

/** Builds the response text directly. */
function serialize(id: JsonRpcId, r: Execution): string {
  if (r.cache === 'hit') return hitFrame(id, r.json)
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},`
  const o = r.outcome
  if (o.error !== undefined) return `${head}"error":${JSON.stringify(o.error)}}`
  if (o instanceof RawResult) return `${head}"result":${o.json}}`
  return `${head}"result":${JSON.stringify(o.result) ?? 'null'}}`
}
