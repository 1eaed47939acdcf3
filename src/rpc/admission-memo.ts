import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import type { JsonRpcId } from '../jsonrpc.ts'
import type { HttpAdmission } from './endpoint.ts'

/**
 * The fast lane's memory of admitted polling calls. Clients poll with bodies that differ only in
 * their id — `{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}`, as viem, web3.js
 * and most SDKs write them — and each such call was parsed, checked and admitted anew. For a body
 * of exactly that form (the id first after `"jsonrpc":"2.0"`, empty params, no other `"id"` and no
 * escape anywhere in the rest), the admission made for the first one is kept per key and network,
 * and a later body with the same rest gets it with its own id, without `JSON.parse` or the
 * admission: what parsing would have given, since the rest is the same text and the id is the one
 * `"id"` member. Anything else is parsed and admitted as before. docs/gateway.md, "Polling calls".
 *
 * Kept per caller object, which the auth cache replaces at each re-read of the key (at most a
 * second apart while the key is in use): a change to the key's allowed methods or scopes reaches
 * the memory as it reaches the gate.
 */
const PREFIX = '{"jsonrpc":"2.0","id":'
const EMPTY_PARAMS_END = '"params":[]}'
/** Longer bodies are not polling calls of this form. */
const MAX_BODY = 256
/** Bodies kept per caller and network; past it the map starts again (a client cycling method names). */
const MAX_KEPT = 64
/** An id that needs no unescaping: a safe non-negative integer, or a short string of plain characters. */
const NUMBER_ID = /^(?:0|[1-9][0-9]{0,14})$/
const STRING_ID = /^"[A-Za-z0-9._:-]{0,64}"$/

interface Kept {
  /** The first body as parsed, its id aside (the request explorer's record of each call). */
  readonly body: Record<string, unknown>
  readonly admission: HttpAdmission
}

/** A body of the memo's form split at its id: the id's value and the text after it. */
interface Split {
  readonly id: JsonRpcId
  readonly rest: string
}

function split(text: string): Split | undefined {
  if (text.length > MAX_BODY || !text.endsWith(EMPTY_PARAMS_END) || !text.startsWith(PREFIX)) return undefined
  const comma = text.indexOf(',', PREFIX.length)
  if (comma < 0) return undefined
  const token = text.slice(PREFIX.length, comma)
  let id: JsonRpcId
  if (NUMBER_ID.test(token)) id = Number(token)
  else if (STRING_ID.test(token)) id = token.slice(1, -1)
  else return undefined
  return { id, rest: text.slice(comma) }
}

/**
 * A recalled call: the kept admission, this call's id, and what is made from them only when read.
 * A call answered from the cache reads neither its own admission (the kept one's method, params,
 * spec and compute units are its own; its id is `id`) nor, unless the request explorer keeps it,
 * its body: most recalled calls copy nothing.
 */
export class Recalled {
  private own: HttpAdmission | undefined

  constructor(
    /** Shared by every call recalled from it: read, never changed, never run. */
    readonly kept: HttpAdmission,
    private readonly keptBody: Record<string, unknown>,
    readonly id: JsonRpcId,
  ) {}

  /** The call's own admission, with its id: what a call that goes on to be run gets. */
  get admission(): HttpAdmission {
    if (this.own === undefined) this.own = withId(this.kept, this.id)
    return this.own
  }

  get body(): Record<string, unknown> {
    return { ...this.keptBody, id: this.id }
  }
}

export class AdmissionMemo {
  private readonly byCaller = new WeakMap<Caller, Map<Network, Map<string, Kept>>>()

  /** The admission and explorer body for `text`, when a body with the same rest was admitted. */
  recall(caller: Caller, network: Network, text: string): Recalled | undefined {
    const s = split(text)
    if (!s) return undefined
    const kept = this.byCaller.get(caller)?.get(network)?.get(s.rest)
    if (!kept) return undefined
    return new Recalled(kept.admission, kept.body, s.id)
  }

  /**
   * Keeps a single call's admission made from `text` (parsed as `body`), when the body is of the
   * memo's form and parsing read its id where `split` does.
   */
  keep(caller: Caller, network: Network, text: string, body: unknown, admission: HttpAdmission): void {
    if (admission.batch || admission.runnable !== 1) return
    const slot = admission.slots[0]
    if (!slot?.call || slot.intercepted) return
    const s = split(text)
    // A second "id" member would be the one JSON.parse keeps; an escape could spell one.
    if (!s || s.rest.includes('"id"') || s.rest.includes('\\')) return
    if (typeof body !== 'object' || body === null || (body as { id?: unknown }).id !== s.id) return
    let networks = this.byCaller.get(caller)
    if (!networks) {
      networks = new Map()
      this.byCaller.set(caller, networks)
    }
    let kept = networks.get(network)
    if (!kept) {
      kept = new Map()
      networks.set(network, kept)
    }
    if (kept.size >= MAX_KEPT) kept.clear()
    kept.set(s.rest, { body: { ...(body as Record<string, unknown>), id: null }, admission })
  }
}

/**
 * The kept admission for a call with another id: new objects down to the request and its (empty)
 * params, so nothing a call does to its own reaches the next; the method's spec is shared.
 */
function withId(admission: HttpAdmission, id: JsonRpcId): HttpAdmission {
  const slot = admission.slots[0]
  // `keep` keeps only a single call's admission.
  if (!slot?.call) return admission
  const { call } = slot
  return {
    ...admission,
    slots: [
      { call: { ...call, request: { ...call.request, id, params: [] } }, intercepted: slot.intercepted },
    ],
  }
}
