import type { RpcOutcome } from '../jsonrpc.ts'
import { RPC_INTERNAL_ERROR, RpcError } from '../jsonrpc.ts'
import { type CallParams, HttpUpstream, type UpstreamCall, UpstreamError } from './http-upstream.ts'
import type { UpstreamStatus } from './upstream-state.ts'

/**
 * How a method must be sent upstream (chains owns what it means; the JSON-RPC method registry,
 * src/rpc/methods/, says which methods need what).
 */
export interface UpstreamPolicy {
  /** State lives on one node (filters): always the same upstream, never hedged. */
  readonly sticky: boolean
  /** Changes state: never hedged, never retried elsewhere after a timeout (it may have landed). */
  readonly write: boolean
  /** Sent to every eligible upstream at once (raw transactions), when the network enables it. */
  readonly broadcast: boolean
}

/** What a pool needs to know about a method: its policy and its metric label. */
export interface MethodDescription {
  readonly upstream: UpstreamPolicy
  /** The method's name, or "other" for names outside the registry's rows (bounded series). */
  readonly label: string
}

export type DescribeMethod = (kind: 'evm' | 'solana', method: string) => MethodDescription

export interface UpstreamCallOptions {
  /** Overall deadline for the call, across failovers. */
  timeoutMs?: number
}

/**
 * The upstream nodes of one network behind one call. Resolves with the node's result or
 * JSON-RPC error (passed through unchanged); rejects with RpcError -32603 naming the cause
 * when no upstream could answer within the deadline.
 */
export interface UpstreamPool {
  call(method: string, params: readonly unknown[], opts?: UpstreamCallOptions): Promise<RpcOutcome>
  /**
   * `call` for the gateway's forwarding: a successful answer may come back as a RawResult
   * (chains/raw-answer.ts), the node's bytes, parsed only if `result` is read.
   */
  callRaw?(method: string, params: CallParams, opts?: UpstreamCallOptions): Promise<RpcOutcome>
  /**
   * Read-only calls as one JSON-RPC batch to one upstream (failing over as a whole): each
   * call's outcome, in order. For callers that queue many calls for a node anyway (the bundler's
   * simulations): one request instead of one each.
   */
  callBatch?(calls: readonly UpstreamCall[], opts?: UpstreamCallOptions): Promise<RpcOutcome[]>
  close(): Promise<void>
  /** Best head (block number or slot) among verified upstreams, when the pool tracks heads. */
  bestHead?(): number | undefined
  /** Highest block (slot) whose content can no longer change, when the pool knows it. */
  finalizedHead?(): number | undefined
  /** Per-upstream health, for /ready, metrics and tests. */
  statuses?(): UpstreamStatus[]
}

export interface UpstreamSpec {
  url: string
  weight?: number
}

/** Tries the upstreams in configured order, moving on after a transport failure. */
export class FailoverPool implements UpstreamPool {
  private readonly upstreams: HttpUpstream[]

  constructor(
    specs: readonly UpstreamSpec[],
    private readonly defaultTimeoutMs: number,
  ) {
    this.upstreams = specs.map((s, i) => new HttpUpstream(s.url, { label: `upstream-${i}` }))
  }

  call(method: string, params: readonly unknown[], opts: UpstreamCallOptions = {}): Promise<RpcOutcome> {
    return this.firstAnswer((u, left) => u.call(method, params, left), opts)
  }

  callBatch(calls: readonly UpstreamCall[], opts: UpstreamCallOptions = {}): Promise<RpcOutcome[]> {
    return this.firstAnswer((u, left) => u.callBatch(calls, left), opts)
  }

  /** `send` to each upstream in turn until one answers within the deadline. */
  private async firstAnswer<T>(
    send: (upstream: HttpUpstream, leftMs: number) => Promise<T>,
    opts: UpstreamCallOptions,
  ): Promise<T> {
    const deadline = Date.now() + (opts.timeoutMs ?? this.defaultTimeoutMs)
    const failures: string[] = []
    for (const upstream of this.upstreams) {
      const left = deadline - Date.now()
      if (left <= 0) break
      try {
        return await send(upstream, left)
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err
        failures.push(err.message)
      }
    }
    throw new RpcError(
      RPC_INTERNAL_ERROR,
      failures.length > 0
        ? `no upstream could answer: ${failures.join('; ')}`
        : 'no upstream could answer before the deadline',
    )
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.close()))
  }
}
