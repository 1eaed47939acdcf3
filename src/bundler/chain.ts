import {
  type ChainNode,
  chainId,
  getBalance,
  getBlock,
  getCode,
  getTransactionCount,
  nodeError,
} from '../chains/reads.ts'
import { Gate } from '../common/gate.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { BundlerError, BundlerErrorCode, type RpcLog } from './types.ts'

/** What the bundler needs from a network's nodes: `UpstreamPool` fits it. */
export interface RpcCaller {
  call(method: string, params: readonly unknown[]): Promise<RpcOutcome>
  /** Calls as one JSON-RPC batch, outcomes in order (UpstreamPool.callBatch), where supported. */
  callBatch?(calls: readonly { method: string; params: readonly unknown[] }[]): Promise<RpcOutcome[]>
}

/** `eth_call` state override set: per address, code / balance / state diff (hex). */
export type StateOverride = Record<
  string,
  { code?: Hex; balance?: Hex; nonce?: Hex; stateDiff?: Record<string, Hex> }
>

/** Two override sets as one; where both set an account, `b`'s fields win and state diffs merge. */
export function mergeOverrides(a: StateOverride, b: StateOverride): StateOverride {
  const out: StateOverride = { ...a }
  for (const [addr, o] of Object.entries(b)) {
    const key = Object.keys(out).find((k) => k.toLowerCase() === addr.toLowerCase()) ?? addr
    const prev = out[key]
    out[key] = prev
      ? {
          ...prev,
          ...o,
          ...(prev.stateDiff || o.stateDiff ? { stateDiff: { ...prev.stateDiff, ...o.stateDiff } } : {}),
        }
      : o
  }
  return out
}

export type CallOutcome = { ok: true; data: Hex } | { ok: false; revert: Hex; message: string }

export interface BlockInfo {
  number: bigint
  hash: Hash
  timestamp: bigint
  baseFeePerGas: bigint
  gasLimit: bigint
}

/** A log as the node sends it (the same shape the receipts hand back to clients). */
export type RawLog = RpcLog

export interface RawReceipt {
  transactionHash: Hash
  blockNumber: Hex
  blockHash: Hash
  status: Hex
  logs: RawLog[]
  [k: string]: unknown
}

const isHex = (v: unknown): v is Hex => typeof v === 'string' && /^0x[0-9a-fA-F]*$/.test(v)
const hexOf = (v: unknown): Hex | null => (isHex(v) ? v : null)

/**
 * Revert data from a node's error: geth and anvil put it in `error.data` as hex; some nodes nest
 * it (`{data: {data}}`) or give only a message.
 */
function revertData(data: unknown): Hex {
  const direct = hexOf(data)
  if (direct) return direct
  if (data && typeof data === 'object' && 'data' in data)
    return hexOf((data as { data: unknown }).data) ?? '0x'
  return '0x'
}

/**
 * Thin JSON-RPC client for the bundler's reads, simulations and sends. Node failures become
 * BundlerError -32603 naming the method; a revert of `eth_call` is an outcome, not an error.
 */
export class BundlerChain {
  private readonly rpc: RpcCaller
  /** The node without the execution gate: view calls that run a few thousand gas (getNonce). */
  private readonly direct: RpcCaller
  /**
   * Where EntryPointSimulations v0.7 is deployed on this network (simulations.ts), once found:
   * v0.7 simulations then override the EntryPoint with a proxy to it instead of its full code.
   */
  simulations: Address | null = null

  /**
   * `maxConcurrentExecutions` bounds the calls that run the EVM (eth_call, eth_estimateGas,
   * debug_traceCall) in flight at once: anvil runs them one at a time and gets slower, not
   * faster, with many in flight (16 simulations: ~35 ms one by one, ~100 ms all at once).
   */
  constructor(rpc: RpcCaller, maxConcurrentExecutions = Number.POSITIVE_INFINITY) {
    this.direct = rpc
    if (!Number.isFinite(maxConcurrentExecutions)) {
      this.rpc = rpc
      return
    }
    const gate = new Gate(maxConcurrentExecutions)
    const heavy = new Set(['eth_call', 'eth_estimateGas', 'debug_traceCall'])
    const batcher = rpc.callBatch ? new CallBatcher(rpc, rpc.callBatch.bind(rpc), gate) : null
    this.rpc = {
      call: (method, params) =>
        method === 'eth_call' && batcher
          ? batcher.call(params)
          : heavy.has(method)
            ? gate.run(() => rpc.call(method, params))
            : rpc.call(method, params),
    }
  }

  async request<T = unknown>(method: string, params: readonly unknown[]): Promise<T> {
    let out: RpcOutcome
    try {
      out = await this.rpc.call(method, params)
    } catch (err) {
      throw new BundlerError(BundlerErrorCode.internal, `${method} failed: ${(err as Error).message}`)
    }
    if (out.error) throw new BundlerError(BundlerErrorCode.internal, `${method} failed: ${out.error.message}`)
    return out.result as T
  }

  async call(
    tx: { to: Address; data: Hex; from?: Address; gas?: bigint },
    override?: StateOverride,
    block: Hex | 'latest' = 'latest',
    opts: { light?: boolean } = {},
  ): Promise<CallOutcome> {
    const params: unknown[] = [
      {
        to: tx.to,
        data: tx.data,
        ...(tx.from ? { from: tx.from } : {}),
        ...(tx.gas ? { gas: `0x${tx.gas.toString(16)}` } : {}),
      },
      block,
    ]
    if (override && Object.keys(override).length > 0) params.push(override)
    // A light view call (a nonce, a deposit) is not held behind simulations in the gate: it
    // would add a full simulation's wait to every accept for a call that costs the node nothing.
    const out = await this.execute('eth_call', params, opts.light ? this.direct : this.rpc)
    return out.ok ? { ok: true, data: hexOf(out.result) ?? '0x' } : out
  }

  async estimateGas(tx: { to: Address; data: Hex; from: Address }): Promise<CallOutcome & { gas?: bigint }> {
    const out = await this.execute('eth_estimateGas', [tx])
    return out.ok ? { ok: true, data: '0x', gas: BigInt(out.result as string) } : out
  }

  /** An EVM-running call whose revert is an outcome; any other node failure is a BundlerError. */
  private async execute(
    method: 'eth_call' | 'eth_estimateGas',
    params: readonly unknown[],
    rpc: RpcCaller = this.rpc,
  ): Promise<{ ok: true; result: unknown } | { ok: false; revert: Hex; message: string }> {
    let out: RpcOutcome
    try {
      out = await rpc.call(method, params)
    } catch (err) {
      throw new BundlerError(BundlerErrorCode.internal, `${method} failed: ${(err as Error).message}`)
    }
    if (!out.error) return { ok: true, result: out.result }
    const revert = revertData(out.error.data)
    // A node error that is not a revert (bad params, node down) must not pass as a contract verdict.
    if (revert === '0x' && !/revert/i.test(out.error.message))
      throw new BundlerError(BundlerErrorCode.internal, `${method} failed: ${out.error.message}`)
    return { ok: false, revert, message: out.error.message }
  }

  async block(tag: 'latest' | 'pending' = 'latest'): Promise<BlockInfo> {
    const b = await this.request<Record<string, string> | null>('eth_getBlockByNumber', [tag, false])
    if (!b) throw new BundlerError(BundlerErrorCode.internal, `eth_getBlockByNumber ${tag} returned null`)
    return {
      number: BigInt(b.number ?? '0x0'),
      hash: (b.hash ?? '0x') as Hash,
      timestamp: BigInt(b.timestamp ?? '0x0'),
      baseFeePerGas: BigInt(b.baseFeePerGas ?? '0x0'),
      gasLimit: BigInt(b.gasLimit ?? '0x0'),
    }
  }

  /** The canonical hash at `number`, or null past the head (the chain got shorter). */
  async blockHashAt(number: bigint): Promise<Hash | null> {
    const b = await this.read('eth_getBlockByNumber', (node) => getBlock(node, number))
    return b?.hash ?? null
  }

  code(address: Address): Promise<Hex> {
    return this.read('eth_getCode', (node) => getCode(node, address))
  }

  balance(address: Address): Promise<bigint> {
    return this.read('eth_getBalance', (node) => getBalance(node, address))
  }

  transactionCount(address: Address, tag: 'latest' | 'pending' = 'latest'): Promise<bigint> {
    return this.read('eth_getTransactionCount', (node) => getTransactionCount(node, address, tag))
  }

  async chainId(): Promise<number> {
    return Number(await this.read('eth_chainId', (node) => chainId(node)))
  }

  /**
   * A typed read (chains/reads.ts) through this chain's gate and batcher; its failure becomes
   * the BundlerError -32603 every bundler read fails with, with the node's own message.
   */
  private async read<T>(method: string, run: (node: ChainNode) => Promise<T>): Promise<T> {
    try {
      // The network's name is only for a read's own error, which never leaves this class.
      return await run({ pool: this.rpc, chain: 'bundler', network: 'upstream' })
    } catch (err) {
      const message = (nodeError(err) ?? (err as Error)).message
      throw new BundlerError(BundlerErrorCode.internal, `${method} failed: ${message}`)
    }
  }

  async receipt(hash: Hash): Promise<RawReceipt | null> {
    return this.request<RawReceipt | null>('eth_getTransactionReceipt', [hash])
  }

  async transaction(hash: Hash): Promise<{ input: Hex; to: Address | null; blockNumber: Hex | null } | null> {
    return this.request('eth_getTransactionByHash', [hash])
  }

  /**
   * eth_getLogs over a block range. A node that answers with an error of its own (hosted
   * providers cap the range or the result count) is `refused`, so the caller can ask for less;
   * a node that cannot be reached throws as every other read does.
   */
  async logs(filter: {
    address: Address
    topics: (Hex | null)[]
    fromBlock: bigint
    toBlock: bigint
  }): Promise<{ logs: RawLog[] } | { refused: string }> {
    let out: RpcOutcome
    try {
      out = await this.rpc.call('eth_getLogs', [
        {
          address: filter.address,
          topics: filter.topics,
          fromBlock: `0x${filter.fromBlock.toString(16)}`,
          toBlock: `0x${filter.toBlock.toString(16)}`,
        },
      ])
    } catch (err) {
      throw new BundlerError(BundlerErrorCode.internal, `eth_getLogs failed: ${(err as Error).message}`)
    }
    if (out.error) return { refused: out.error.message }
    return { logs: out.result as RawLog[] }
  }

  /**
   * The eth_getLogs width that worked after this network's node last refused a wider range
   * (receipts.ts), and until when lookups start at it instead of being refused again. It lapses
   * so that one passing refusal (a rate limit, say) does not narrow lookups for good.
   */
  logWindow: { blocks: bigint; until: number } | null = null

  /** Sends a signed transaction; "already known" counts as sent (a re-broadcast). */
  async sendRaw(raw: Hex): Promise<{ ok: true } | { ok: false; message: string }> {
    let out: RpcOutcome
    try {
      out = await this.rpc.call('eth_sendRawTransaction', [raw])
    } catch (err) {
      return { ok: false, message: (err as Error).message }
    }
    if (out.error) {
      if (/already known|already imported/i.test(out.error.message)) return { ok: true }
      return { ok: false, message: out.error.message }
    }
    return { ok: true }
  }
}

/** A call of a batch answered with an error that is no revert (no data, no "revert"): the node's, not the EVM's. */
const refusedInBatch = (o: RpcOutcome) =>
  o.error !== undefined && o.error.data === undefined && !/revert/i.test(o.error.message)

/** Most eth_calls sent as one batch. */
const MAX_BATCH = 32

/**
 * The eth_calls waiting for the gate go to the node as one JSON-RPC batch when a slot frees:
 * on a node that runs calls one at a time anyway (anvil) they would each wait their turn, and
 * the request around each cost more than the call (anvil: ~0.5–1 ms a request, ~0.08 ms a call
 * in a batch of 16). Each call still takes its place in the gate's queue; the first to reach a
 * slot carries every call queued by then, and those after it find theirs answered.
 */
class CallBatcher {
  private readonly queue: {
    params: readonly unknown[]
    resolve(out: RpcOutcome): void
    reject(err: unknown): void
  }[] = []
  /** Until when calls go one by one: the node refused a batch. */
  private singleUntil = 0

  constructor(
    private readonly rpc: RpcCaller,
    private readonly batch: NonNullable<RpcCaller['callBatch']>,
    private readonly gate: Gate,
  ) {}

  call(params: readonly unknown[]): Promise<RpcOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ params, resolve, reject })
      this.gate.run(() => this.flush()).catch(() => {})
    })
  }

  private async flush(): Promise<void> {
    const calls = this.queue.splice(0, MAX_BATCH)
    if (calls.length === 0) return
    const one = (c: (typeof calls)[number]) => this.rpc.call('eth_call', c.params).then(c.resolve, c.reject)
    if (calls.length === 1 || Date.now() < this.singleUntil) {
      for (const c of calls) await one(c)
      return
    }
    let outs: RpcOutcome[] | null
    try {
      outs = await this.batch(calls.map((c) => ({ method: 'eth_call', params: c.params })))
    } catch {
      outs = null
    }
    if (!outs || outs.every(refusedInBatch)) {
      // A node without batches, a failed request, or a provider refusing each call of a batch
      // (a batch size cap): one by one for a while, each with its own outcome.
      this.singleUntil = Date.now() + 60_000
      for (const c of calls) await one(c)
      return
    }
    // Calls the node refused on their own (a cap on calls per batch, a per-call rate limit) or
    // left unanswered are asked again alone, after the answered ones are handed out.
    const again: typeof calls = []
    for (const [i, c] of calls.entries()) {
      const out = outs[i]
      if (out === undefined || refusedInBatch(out)) again.push(c)
      else c.resolve(out)
    }
    for (const c of again) await one(c)
  }
}
