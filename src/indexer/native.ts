import type { Hash } from '../types.ts'
import type { ChainHeader } from './chain.ts'
import type { StoredNativeTransfer } from './store.ts'
import type { BlockTrace, InternalTransfer } from './traces.ts'

/**
 * A block's native_transfers rows: each transaction as 'external' (trace_index 0, value possibly
 * 0; a creation's `to` is the address it deploys to), then the value-moving frames inside it as
 * 'internal' (trace_index 1.. in the trace's depth-first order, trace_path the frame's path).
 * A reverted transaction moved no value: no row at all (balances are summed from these rows;
 * docs/data-apis.md, on how this differs from Alchemy). Its frames are none either: the tracers
 * report value only from frames that succeeded (traces.ts).
 */
export function nativeTransfersOf(
  block: ChainHeader,
  internal: readonly InternalTransfer[] | undefined,
): StoredNativeTransfer[] {
  const txs = block.transactions ?? []
  const byTx = new Map<string, InternalTransfer[]>()
  for (const t of internal ?? []) {
    const list = byTx.get(t.txHash)
    if (list) list.push(t)
    else byTx.set(t.txHash, [t])
  }
  // The block's fields written out per row, not spread from a shared object: a spread builds
  // each row through a slow generic copy (a bulk import makes ≈ 190 rows a block).
  const { number: blockNumber, hash: blockHash, timestamp } = block
  const out: StoredNativeTransfer[] = []
  for (const tx of [...txs].sort((a, b) => a.index - b.index)) {
    if (tx.reverted) continue
    out.push({
      blockNumber,
      blockHash,
      timestamp,
      txIndex: tx.index,
      traceIndex: 0,
      txHash: tx.hash,
      category: 'external',
      tracePath: null,
      from: tx.from,
      to: tx.to ?? tx.created ?? null,
      value: tx.value,
    })
    for (const [k, t] of (byTx.get(tx.hash) ?? []).entries())
      out.push({
        blockNumber,
        blockHash,
        timestamp,
        txIndex: tx.index,
        traceIndex: k + 1,
        txHash: tx.hash,
        category: 'internal',
        tracePath: t.path.join('.'),
        from: t.from,
        to: t.to,
        value: t.value,
      })
  }
  return out
}

/**
 * Whether a trace read by number is of this block: the block may have been replaced between
 * the two answers (then the step is retried, as for logs with another block hash). An answer
 * from an older node without transaction hashes is not this block's to vouch for: false too,
 * and the caller traces again with the hashes (traces.ts fills them in by position).
 */
export function traceMatches(block: ChainHeader, trace: BlockTrace, hashesGiven: boolean): boolean {
  const hashes = (block.transactions ?? []).map((t) => t.hash.toLowerCase())
  if (trace.method === 'trace_block') {
    if (trace.blockHash !== undefined && trace.blockHash !== block.hash.toLowerCase()) return false
    const known = new Set(hashes)
    return trace.txHashes.every((h) => h !== undefined && known.has(h))
  }
  if (trace.txHashes.length !== hashes.length) return false
  return trace.txHashes.every((h, i) => (h === undefined ? hashesGiven : h === hashes[i]))
}

/** The block's transaction hashes in order (for a node whose trace answer names none). */
export const txHashesOf = (block: ChainHeader): Hash[] => (block.transactions ?? []).map((t) => t.hash)
