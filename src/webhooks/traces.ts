import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Address, Hash } from '../types.ts'

/**
 * Internal (trace-level) native transfers for `internal_transfer` webhooks: value moved by a
 * call inside a transaction, not by the transaction itself. Read with
 * `debug_traceBlockByNumber` and the call tracer (geth, anvil, erigon, reth) or, when the node
 * refuses that, `trace_block` (erigon, nethermind, reth, anvil). Asked only for blocks that
 * have an active internal_transfer candidate. A node that answers neither at create time is
 * refused there (400); if tracing fails later, that block's internal transfers are logged as
 * lost rather than holding up the index and every other webhook.
 */
export interface InternalTransfer {
  txHash: Hash
  from: Address
  to: Address
  value: bigint
  /** The call's position in its transaction's call tree (e.g. [0, 1]), for ordering and ids. */
  path: number[]
  callType: string
}

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/)
interface CallFrame {
  type?: string
  from?: string
  to?: string
  value?: string
  calls?: CallFrame[]
}
const frame: z.ZodType<CallFrame> = z.lazy(() =>
  z.object({
    type: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    value: hex.optional(),
    calls: z.array(frame).optional(),
  }),
)
const debugAnswer = z.array(z.object({ txHash: hex.optional(), result: frame.optional() }))
const traceAnswer = z.array(
  z.object({
    type: z.string(),
    transactionHash: hex.nullable().optional(),
    traceAddress: z.array(z.number()),
    action: z.object({
      from: z.string().optional(),
      to: z.string().optional(),
      value: hex.optional(),
      callType: z.string().optional(),
    }),
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

  /** Whether the network's node answers either trace method (create-time check). */
  async supported(network: string): Promise<boolean> {
    return (await this.read(network, 'latest')) !== undefined
  }

  /** The block's internal native transfers with value, in call order; [] when tracing failed. */
  async internalTransfers(
    network: string,
    block: bigint,
    txHashes: readonly Hash[],
  ): Promise<InternalTransfer[]> {
    const got = await this.read(network, `0x${block.toString(16)}`, txHashes)
    if (got === undefined) {
      this.logger?.error(
        { network, block: block.toString() },
        'tracing the block failed: its internal_transfer events are lost',
      )
      return []
    }
    return got
  }

  private async read(
    network: string,
    tag: string,
    txHashes: readonly Hash[] = [],
  ): Promise<InternalTransfer[] | undefined> {
    const pool = this.networks.getBySlug(network).pool
    const order: Method[] = this.method.get(network) === 'trace' ? ['trace', 'debug'] : ['debug', 'trace']
    for (const m of order) {
      try {
        const out =
          m === 'debug'
            ? await pool.call('debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }])
            : await pool.call('trace_block', [tag])
        if (out.error) continue
        const parsed = m === 'debug' ? fromCallTracer(out.result, txHashes) : fromTraceBlock(out.result)
        if (parsed === undefined) continue
        this.method.set(network, m)
        return parsed
      } catch {}
    }
    return undefined
  }
}

const positive = (v: string | undefined) => (v && v !== '0x' ? BigInt(v) : 0n)
const lower = (s: string | undefined) => (s ?? '').toLowerCase() as Address

function fromCallTracer(raw: unknown, txHashes: readonly Hash[]): InternalTransfer[] | undefined {
  const parsed = debugAnswer.safeParse(raw)
  if (!parsed.success) return undefined
  const out: InternalTransfer[] = []
  parsed.data.forEach((tx, i) => {
    // Older nodes omit txHash: the answer is in transaction order.
    const txHash = (tx.txHash ?? txHashes[i] ?? '').toLowerCase() as Hash
    const walk = (f: CallFrame, path: number[]) => {
      const value = positive(f.value)
      // The root frame is the transaction itself; DELEGATECALL/STATICCALL move no value.
      if (
        path.length > 0 &&
        value > 0n &&
        f.to &&
        (f.type === 'CALL' ||
          f.type === 'CALLCODE' ||
          f.type === 'CREATE' ||
          f.type === 'CREATE2' ||
          f.type === 'SELFDESTRUCT')
      )
        out.push({
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
  return out
}

function fromTraceBlock(raw: unknown): InternalTransfer[] | undefined {
  const parsed = traceAnswer.safeParse(raw)
  if (!parsed.success) return undefined
  const out: InternalTransfer[] = []
  for (const t of parsed.data) {
    if (t.traceAddress.length === 0 || !t.transactionHash) continue
    const value = positive(t.action.value)
    const to = t.action.to
    if (value === 0n || !to) continue
    if (t.type === 'call' && t.action.callType !== 'call' && t.action.callType !== 'callcode') continue
    out.push({
      txHash: t.transactionHash.toLowerCase() as Hash,
      from: lower(t.action.from),
      to: lower(to),
      value,
      path: t.traceAddress,
      callType: t.type === 'call' ? (t.action.callType ?? 'call') : t.type,
    })
  }
  return out
}
