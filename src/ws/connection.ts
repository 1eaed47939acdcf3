import { randomBytes } from 'node:crypto'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import type { Caller } from '../auth/service.ts'
import { RawResult } from '../chains/raw-answer.ts'
import type { Network } from '../chains/registry.ts'
import type { Charger } from '../http/charge.ts'
import { internalJsonRpcError } from '../http/jsonrpc-errors.ts'
import {
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcRequest,
  RPC_INVALID_PARAMS,
  RPC_INVALID_REQUEST,
  RPC_LIMIT_EXCEEDED,
  RPC_PARSE_ERROR,
  RPC_RATE_LIMITED,
} from '../jsonrpc.ts'
import type { WsPlanLimits } from '../limits/plans.ts'
import { admit, type Call } from '../rpc/admission.ts'
import { DEFAULT_MAX_BATCH, errorFrame, hitFrame, replyFrame } from '../rpc/envelope.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import type { RpcService } from '../rpc/service.ts'
import type { NetworkStreams } from './network-streams.ts'
import { PushPayload, subscriptionIdBytes } from './push-frame.ts'
import {
  type LogFilter,
  parseSubscribeParams,
  parseUnsubscribeParams,
  type SubscribeRequest,
} from './routes.ts'
import type { StreamSubscriber } from './subscriber.ts'
import type { MinedFilter, PendingFilter } from './tx-filters.ts'

/**
 * Close codes (RFC 6455 7.4.1): 1001 going away (shutdown), 1008 policy violation (a slow
 * client; a key revoked or no longer allowed while connected).
 */
export const CLOSE_GOING_AWAY = 1001
export const CLOSE_SLOW_CLIENT = 1008
export const CLOSE_POLICY = 1008

export interface ConnectionDeps {
  readonly rpc: RpcService
  readonly charger: Charger
  readonly streams: NetworkStreams
  /** The surface's methods (the Alchemy-compatible root's); the network kind's by default. */
  readonly registry?: MethodRegistry
  /** Alchemy's transaction subscription kinds are served too. */
  readonly alchemyKinds: boolean
  /** The plan's limits when the connection opened; a plan change replaces them (revalidate). */
  readonly wsLimits: WsPlanLimits
  /** A client is closed once more than this many bytes wait to be sent to it. */
  readonly sendBufferBytes: number
  /** Calls of one connection being executed at once; more are refused, not queued. */
  readonly maxInFlight: number
  /** Bytes pushed to this account (charged in compute units by the service). */
  recordPush(caller: Caller, bytes: number): void
  /** Largest send buffer seen (tests assert the bound). */
  observeBuffered(bytes: number): void
  onSlowClose(): void
}

/** ws.send options for a Buffer that holds JSON text. */
const TEXT = { binary: false } as const

class ClientSubscription implements StreamSubscriber {
  private readonly idBytes: Buffer
  readonly kind: SubscribeRequest['kind']
  readonly filter?: LogFilter
  readonly mined?: MinedFilter
  readonly pending?: PendingFilter

  constructor(
    readonly id: string,
    request: SubscribeRequest,
    private readonly conn: ClientConnection,
  ) {
    this.idBytes = subscriptionIdBytes(id)
    this.kind = request.kind
    if (request.kind === 'logs') this.filter = request.filter
    else if ('mined' in request) this.mined = request.mined
    else if ('pending' in request) this.pending = request.pending
  }

  deliver(payload: PushPayload): void {
    this.conn.push(payload, this.idBytes)
  }
}

type Reply = string | undefined

/**
 * One client socket: JSON-RPC in, replies and pushes out. Subscriptions are served from the
 * network's shared streams; every other call goes through the same admission, charging and
 * execution as HTTP JSON-RPC. Sends are bounded: a client that lets its buffer grow past the
 * cap is closed with 1008 and a reason, never buffered without bound.
 */
export class ClientConnection {
  private readonly subs = new Map<string, ClientSubscription>()
  private inFlight = 0
  private closing = false
  /** Subscribe/unsubscribe run in arrival order; other calls run concurrently. */
  private subscriptionOps: Promise<unknown> = Promise.resolve()
  private wsLimits: WsPlanLimits
  private current: Caller

  /**
   * `socket` is the upgraded TCP socket under `ws`: pushes are written to it as whole frames.
   * That is safe because `ws` itself writes every frame synchronously and whole when messages
   * are not compressed (perMessageDeflate is off) and never Blobs, so frames cannot interleave.
   */
  private readonly ws: WebSocket
  private readonly socket: Duplex
  readonly network: Network

  constructor(
    client: { ws: WebSocket; socket: Duplex; caller: Caller; network: Network },
    private readonly deps: ConnectionDeps,
  ) {
    this.ws = client.ws
    this.socket = client.socket
    this.network = client.network
    this.current = client.caller
    this.wsLimits = deps.wsLimits
  }

  /** The key's caller as last revalidated: every message and push is admitted and charged as it. */
  get caller(): Caller {
    return this.current
  }

  /**
   * The key's caller as it is now (WsService re-reads every open key about once a second):
   * later messages, pushes and limits follow its scopes and plan. A key that may no longer
   * subscribe (rpc:read removed) is closed with 1008, as a revoked one is.
   */
  revalidate(next: Caller, wsLimits: WsPlanLimits): void {
    if (this.closing || next === this.current) return
    if (!next.scopes.has('rpc:read')) {
      this.close(CLOSE_POLICY, 'the API key no longer has the rpc:read scope')
      return
    }
    this.current = next
    this.wsLimits = wsLimits
  }

  get subscriptionCount(): number {
    return this.subs.size
  }

  async onMessage(text: string): Promise<void> {
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch (err) {
      this.send(
        errorFrame(null, { code: RPC_PARSE_ERROR, message: `parse error: ${(err as Error).message}` }),
      )
      return
    }
    if (this.inFlight >= this.deps.maxInFlight) {
      this.send(
        errorFrame(idOf(body), {
          code: RPC_LIMIT_EXCEEDED,
          message: `in-flight limit: at most ${this.deps.maxInFlight} requests per connection may be pending; wait for replies`,
        }),
      )
      return
    }
    this.inFlight++
    // New subscriptions start only once their reply is on the wire, so no push precedes it.
    const activate: ClientSubscription[] = []
    try {
      const reply = await this.answer(body, activate)
      if (reply !== undefined) this.send(reply)
      for (const sub of activate) this.activate(sub)
    } catch (err) {
      // The client never learns these ids: drop them, or they would hold subscription slots.
      for (const sub of activate) {
        if (this.subs.get(sub.id) !== sub) continue
        this.subs.delete(sub.id)
        this.deps.streams.remove(sub)
      }
      // E.g. the rate limiter's store is down: answer rather than leave the caller waiting.
      this.send(errorFrame(idOf(body), internalJsonRpcError('internal error; retry shortly')))
      throw err
    } finally {
      this.inFlight--
    }
  }

  /**
   * Sends one push unless the client is too far behind: the event's shared frame with this
   * subscription's id patched in, one socket write, no per-client JSON, framing or allocation.
   */
  push(payload: PushPayload, id: Buffer): void {
    if (this.closing || this.ws.readyState !== this.ws.OPEN) return
    if (!this.hasRoom(payload.frameBytes)) return
    payload.writeTo(this.socket, id)
    this.deps.observeBuffered(this.socket.writableLength)
    this.deps.recordPush(this.caller, payload.bytes)
  }

  /** Ends every subscription (the socket closed or is closing). */
  dispose(): void {
    this.closing = true
    for (const sub of this.subs.values()) this.deps.streams.remove(sub)
    this.subs.clear()
  }

  close(code: number, reason: string): void {
    if (this.closing) return
    this.dispose()
    this.ws.close(code, reason)
  }

  /** Sends unless the client is too far behind; then closes it instead (false). */
  private send(frame: string | Buffer): boolean {
    if (this.closing || this.ws.readyState !== this.ws.OPEN) return false
    if (!this.hasRoom(typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length)) return false
    this.ws.send(frame, TEXT)
    this.deps.observeBuffered(this.ws.bufferedAmount)
    return true
  }

  /** False (and the client closed with 1008) when `bytes` more would exceed the send buffer cap. */
  private hasRoom(bytes: number): boolean {
    if (this.ws.bufferedAmount + bytes <= this.deps.sendBufferBytes) return true
    this.deps.onSlowClose()
    this.close(
      CLOSE_SLOW_CLIENT,
      `client too slow: more than ${this.deps.sendBufferBytes} bytes waiting to be sent`,
    )
    return false
  }

  /**
   * A call or a batch, through the same admission as HTTP. A batch costs one request and the
   * sum of its calls' compute units, charged only when some call will run; subscription calls
   * are answered here, in arrival order, and charged on their own.
   */
  private async answer(body: unknown, activate: ClientSubscription[]): Promise<Reply> {
    const admission = admit(body, {
      network: this.network,
      caller: this.caller,
      maxBatch: DEFAULT_MAX_BATCH,
      intercept: (spec) => spec.ws !== undefined,
      ...(this.deps.registry ? { registry: this.deps.registry } : {}),
    })
    if (!admission.ok)
      return errorFrame(null, { code: RPC_INVALID_REQUEST, message: admission.error.message })
    const { slots } = admission
    const answered: (string | undefined)[] = []
    for (const [i, slot] of slots.entries())
      if (slot.call && slot.intercepted) answered[i] = await this.subscriptionCall(slot.call, activate)
    const refusal =
      admission.runnable > 0 ? await this.charge(admission.computeUnits, admission.metricMethod) : undefined
    const frames = await Promise.all(
      slots.map(async (slot, i) => {
        const done = answered[i]
        if (done !== undefined) return done
        if (!slot.call) return errorFrame(slot.id, slot.error)
        const { request, spec } = slot.call
        if (refusal) return errorFrame(request.id, refusal)
        // With the caller, as over HTTP: some rows answer per account (rpc/methods/spec.ts).
        const r = await this.deps.rpc.run(this.network, request, spec, this.caller)
        if (r.cache === 'hit') return hitFrame(request.id, r.json)
        const o = r.outcome
        if (o.error !== undefined) return errorFrame(request.id, o.error)
        return o instanceof RawResult ? hitFrame(request.id, o.json) : replyFrame(request.id, o.result)
      }),
    )
    return admission.batch ? `[${frames.join(',')}]` : frames[0]
  }

  /** eth_subscribe / eth_unsubscribe, in arrival order (other calls run concurrently). */
  private subscriptionCall(call: Call, activate: ClientSubscription[]): Promise<string> {
    const op = this.subscriptionOps.then(() =>
      call.spec.ws === 'subscribe' ? this.subscribe(call, activate) : this.unsubscribe(call.request),
    )
    this.subscriptionOps = op.catch(() => {})
    return op
  }

  private async subscribe(call: Call, activate: ClientSubscription[]): Promise<string> {
    const { request } = call
    const parsed = parseSubscribeParams(request.params, this.deps.alchemyKinds)
    if (!parsed.ok) return errorFrame(request.id, { code: RPC_INVALID_PARAMS, message: parsed.message })
    const limit = this.wsLimits.subscriptionsPerConnection
    if (this.subs.size >= limit) {
      return errorFrame(request.id, {
        code: RPC_LIMIT_EXCEEDED,
        message: `subscription limit: at most ${limit} subscriptions per connection on the ${this.caller.plan} plan; unsubscribe first`,
      })
    }
    const refusal = await this.charge(call.computeUnits, 'eth_subscribe')
    if (refusal) return errorFrame(request.id, refusal)
    await this.deps.streams.prepare(parsed.value.kind)
    const id = `0x${randomBytes(16).toString('hex')}`
    const sub = new ClientSubscription(id, parsed.value, this)
    // Counted against the limit now; fed by the stream once the reply is sent (activate).
    this.subs.set(id, sub)
    activate.push(sub)
    return replyFrame(request.id, id)
  }

  private activate(sub: ClientSubscription): void {
    if (this.closing || this.subs.get(sub.id) !== sub) return
    this.deps.streams.add(sub)
    if (sub.kind === 'syncing') {
      this.deps.streams
        .syncingStatus()
        .then((json) => this.subs.get(sub.id) === sub && sub.deliver(new PushPayload(json)))
        .catch(() => {})
    }
  }

  private async unsubscribe(request: JsonRpcRequest): Promise<string> {
    const id = parseUnsubscribeParams(request.params)
    if (id === undefined) {
      return errorFrame(request.id, {
        code: RPC_INVALID_PARAMS,
        message: 'params[0]: must be a subscription id (0x hex) returned by eth_subscribe',
      })
    }
    const sub = this.subs.get(id)
    if (!sub) return replyFrame(request.id, false)
    this.subs.delete(id)
    this.deps.streams.remove(sub)
    return replyFrame(request.id, true)
  }

  private async charge(computeUnits: number, route: string): Promise<JsonRpcErrorObject | undefined> {
    const { refusal } = await this.deps.charger.chargeCaller(this.caller, computeUnits, 1, `ws ${route}`)
    if (!refusal) return undefined
    return {
      code: RPC_RATE_LIMITED,
      message: refusal.message,
      data: { retryAfter: Number(refusal.headers['retry-after'] ?? 1) },
    }
  }
}

function idOf(body: unknown): JsonRpcId {
  const id = (body as { id?: unknown } | null)?.id
  return typeof id === 'string' || typeof id === 'number' ? id : null
}
