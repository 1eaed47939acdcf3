import { z } from 'zod'
import { hash } from '../chains/read-schemas.ts'
import { nodeError, readUnchecked } from '../chains/reads.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Address, Hash } from '../types.ts'

/**
 * Internal (trace-level) native transfers: value moved by a call frame inside a transaction,
 * not by the transaction itself. One reader for the indexer (native_transfers, category
 * 'internal') and the `internal_transfer` webhook kind. Read with `trace_block` (erigon,
 * nethermind, reth, anvil) or, when the node refuses that, `debug_traceBlockByNumber` with the
 * call tracer (geth, anvil, erigon, reth); the method that answered is asked first next time.
 * trace_block first: nodes that have it serve it from stored or cheaper traces (anvil answers
 * it about 20 times faster than the call tracer, which re-executes the block), and a node
 * without it (geth) costs one "method not found" once.
 *
 * Frames that reverted (and everything below them) moved nothing and are left out, as are
 * DELEGATECALL and STATICCALL, which carry no value of their own.
 */
export interface InternalTransfer {
  txHash: Hash
  from: Address
  to: Address
  value: bigint
  /** The frame's position in its transaction's call tree ([0] = first call of the top frame). */
  path: number[]
  callType: string
}

export type TraceMethod = 'debug_traceBlockByNumber' | 'trace_block'

/** One block's traces as the node answered them. */
export interface BlockTrace {
  method: TraceMethod
  /** Internal transfers with value, transaction by transaction, each in depth-first order. */
  internal: InternalTransfer[]
  /**
   * The transactions the answer covers, in the node's order (debug: one per transaction of the
   * block, undefined entries where an older node gave no hash; trace: those with any trace).
   */
  txHashes: (Hash | undefined)[]
  /** trace_block names the block it traced; the call tracer does not. */
  blockHash?: Hash
}

export type TraceOutcome =
  | { ok: true; trace: BlockTrace }
  /**
   * `refused`: every method answered, with a JSON-RPC error or a shape we cannot read (the
   * node does not offer tracing, or not for this block); otherwise the node was not reached.
   */
  | { ok: false; refused: boolean; reason: string }

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/)
interface CallFrame {
  type?: string
  from?: string
  to?: string
  value?: string
  error?: string
  calls?: CallFrame[]
}
const frame: z.ZodType<CallFrame> = z.lazy(() =>
  z.object({
    type: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    value: hex.optional(),
    error: z.string().optional(),
    calls: z.array(frame).optional(),
  }),
)
const debugAnswer = z.array(z.object({ txHash: hash.optional(), result: frame.optional() }))
const traceAnswer = z.array(
  z.object({
    type: z.string(),
    blockHash: hash.optional(),
    transactionHash: hash.nullable().optional(),
    traceAddress: z.array(z.number().int().min(0)),
    error: z.string().optional(),
    action: z.object({
      from: z.string().optional(),
      to: z.string().optional(),
      value: hex.optional(),
      callType: z.string().optional(),
      // suicide (selfdestruct) frames
      address: z.string().optional(),
      refundAddress: z.string().optional(),
      balance: hex.optional(),
    }),
    result: z.object({ address: z.string().optional() }).nullable().optional(),
  }),
)

type Method = 'debug' | 'trace'

export class TraceReader {
  /** Which method each network's node answered last. */
  private readonly method = new Map<string, Method>()

  constructor(
    private readonly networks: NetworkRegistry,
    private readonly logger?: Logger,
  ) {}

  /** Whether the network's node answers either trace method (webhooks' create-time check). */
  async supported(network: string): Promise<boolean> {
    return (await this.traceBlock(network, 'latest')).ok
  }

  /** The block's internal transfers with value, in call order; [] (logged) when tracing failed. */
  async internalTransfers(
    network: string,
    block: bigint,
    txHashes: readonly Hash[],
  ): Promise<InternalTransfer[]> {
    const got = await this.traceBlock(network, block, txHashes)
    if (!got.ok) {
      this.logger?.error(
        { network, block: block.toString(), reason: got.reason },
        'tracing the block failed: its internal_transfer events are lost',
      )
      return []
    }
    return got.trace.internal
  }

  /**
   * Traces one block. `txHashes` (the block's, in order) name the transactions of an answer
   * from an older node that gives none.
   */
  async traceBlock(
    network: string,
    block: bigint | 'latest',
    txHashes: readonly Hash[] = [],
  ): Promise<TraceOutcome> {
    const tag = block === 'latest' ? block : `0x${block.toString(16)}`
    const net = this.networks.getBySlug(network)
    const order: Method[] = this.method.get(network) === 'debug' ? ['debug', 'trace'] : ['trace', 'debug']
    const reasons: string[] = []
    let refused = true
    for (const m of order) {
      const name: TraceMethod = m === 'debug' ? 'debug_traceBlockByNumber' : 'trace_block'
      try {
        let result: unknown
        try {
          // Each tracer's answer is checked below by its own schema (fromCallTracer, fromTraceBlock).
          result = await readUnchecked(net, name, m === 'debug' ? [tag, { tracer: 'callTracer' }] : [tag])
        } catch (err) {
          const refusedBy = nodeError(err)
          if (!refusedBy) throw err
          reasons.push(`${name}: ${refusedBy.message}`.slice(0, 200))
          continue
        }
        const parsed = m === 'debug' ? fromCallTracer(result, txHashes) : fromTraceBlock(result)
        if (parsed === undefined) {
          reasons.push(`${name}: answer in an unexpected shape`)
          continue
        }
        this.method.set(network, m)
        return { ok: true, trace: parsed }
      } catch (err) {
        refused = false
        reasons.push(`${name}: ${(err as Error).message}`.slice(0, 200))
      }
    }
    return { ok: false, refused, reason: reasons.join('; ') }
  }
}

const amount = (v: string | undefined) => (v && v !== '0x' ? BigInt(v) : 0n)
const lower = (s: string | undefined) => (s ?? '').toLowerCase() as Address
const VALUE_FRAMES = new Set(['CALL', 'CALLCODE', 'CREATE', 'CREATE2', 'SELFDESTRUCT'])

function fromCallTracer(raw: unknown, txHashes: readonly Hash[]): BlockTrace | undefined {
  const parsed = debugAnswer.safeParse(raw)
  if (!parsed.success) return undefined
  const internal: InternalTransfer[] = []
  const hashes: (Hash | undefined)[] = []
  parsed.data.forEach((tx, i) => {
    // Older nodes omit txHash: the answer is in transaction order.
    const given = tx.txHash
    hashes.push(given)
    const txHash = given ?? ((txHashes[i]?.toLowerCase() ?? '') as Hash)
    const walk = (f: CallFrame, path: number[]) => {
      // A reverted frame moved nothing, and neither did anything it called.
      if (f.error !== undefined) return
      const value = amount(f.value)
      // The top frame is the transaction itself (an 'external' transfer, not an internal one).
      if (path.length > 0 && value > 0n && f.to && VALUE_FRAMES.has(f.type ?? ''))
        internal.push({
          txHash,
          from: lower(f.from),
          to: lower(f.to),
          value,
          path,
          callType: (f.type ?? '').toLowerCase(),
        })
      for (const [k, c] of (f.calls ?? []).entries()) walk(c, [...path, k])
    }
    if (tx.result) walk(tx.result, [])
  })
  return { method: 'debug_traceBlockByNumber', internal, txHashes: hashes }
}

function fromTraceBlock(raw: unknown): BlockTrace | undefined {
  const parsed = traceAnswer.safeParse(raw)
  if (!parsed.success) return undefined
  const internal: InternalTransfer[] = []
  const hashes: Hash[] = []
  // Reverted frames by transaction and path: their descendants moved nothing either.
  const reverted = new Set<string>()
  let blockHash: Hash | undefined
  for (const t of parsed.data) {
    blockHash ??= t.blockHash
    // Block and uncle rewards have no transaction.
    if (!t.transactionHash) continue
    const txHash = t.transactionHash
    if (hashes.at(-1) !== txHash) hashes.push(txHash)
    const at = (n: number) => `${txHash}:${t.traceAddress.slice(0, n).join('.')}`
    if (t.error !== undefined) {
      reverted.add(at(t.traceAddress.length))
      continue
    }
    let under = false
    for (let n = 0; n < t.traceAddress.length && !under; n++) under = reverted.has(at(n))
    if (under || t.traceAddress.length === 0) continue
    const a = t.action
    let from = a.from
    let to = a.to
    let value = amount(a.value)
    let callType = t.type
    if (t.type === 'call') {
      if (a.callType !== 'call' && a.callType !== 'callcode') continue
      callType = a.callType
    } else if (t.type === 'create') {
      to = t.result?.address
    } else if (t.type === 'suicide') {
      from = a.address
      to = a.refundAddress
      value = amount(a.balance)
      callType = 'selfdestruct'
    } else continue
    if (value === 0n || !to) continue
    internal.push({ txHash, from: lower(from), to: lower(to), value, path: t.traceAddress, callType })
  }
  const out: BlockTrace = { method: 'trace_block', internal, txHashes: hashes }
  if (blockHash) out.blockHash = blockHash
  return out
}
