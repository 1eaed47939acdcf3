import type { Network } from '../chains/registry.ts'
import type { ChainHeader, ChainLog } from './chain.ts'
import { decodeLog } from './decode.ts'
import type { SkippedLog } from './skipped-logs.ts'
import type { InternalTransfer } from './traces.ts'
import type { IndexedBlock, TokenTransfer } from './types.ts'

/**
 * The block as consumers see it: its logs in order, their token transfers, its transactions and
 * internal transfers. A log that does not decode goes to `skipped` (reported once its block
 * commits), never thrown: one contract's malformed log must not stop the network's index.
 */
export function toIndexedBlock(
  net: Pick<Network, 'slug' | 'chainId'>,
  block: ChainHeader,
  logs: readonly ChainLog[],
  internal: readonly InternalTransfer[] | undefined,
  skipped: SkippedLog[],
): IndexedBlock {
  const sorted = inOrder(logs)
  const indexed: IndexedBlock = {
    network: net.slug,
    chainId: net.chainId ?? 0,
    number: block.number,
    hash: block.hash,
    parentHash: block.parentHash,
    timestamp: block.timestamp,
    logs: sorted.map((l) => ({
      address: l.address,
      topics: l.topics,
      data: l.data,
      txHash: l.txHash,
      logIndex: l.logIndex,
    })),
    transfers: sortedTransfers(net.slug, block.number, sorted, skipped),
  }
  if (block.transactions) indexed.transactions = block.transactions
  if (block.gasUsed !== undefined) indexed.gasUsed = block.gasUsed
  if (block.transactionCount !== undefined) indexed.transactionCount = block.transactionCount
  if (internal) indexed.internalTransfers = internal
  return indexed
}

/**
 * A block's token transfers alone, as toIndexedBlock finds them: for a writer that needs no
 * consumer's view of the block (the bulk import), without copying every log.
 */
export function blockTransfers(
  net: Pick<Network, 'slug'>,
  block: Pick<ChainHeader, 'number'>,
  logs: readonly ChainLog[],
  skipped: SkippedLog[],
): TokenTransfer[] {
  return sortedTransfers(net.slug, block.number, inOrder(logs), skipped)
}

/** The logs by log index: as given when they already are (a source that sorted them). */
function inOrder<T extends { logIndex: number }>(logs: readonly T[]): readonly T[] {
  for (let i = 1; i < logs.length; i++)
    if ((logs[i] as T).logIndex < (logs[i - 1] as T).logIndex)
      return [...logs].sort((a, b) => a.logIndex - b.logIndex)
  return logs
}

function sortedTransfers(
  network: string,
  blockNumber: bigint,
  logs: readonly IndexedBlock['logs'][number][],
  skipped: SkippedLog[],
): TokenTransfer[] {
  const out: TokenTransfer[] = []
  for (const l of logs) for (const t of transfersOf(network, blockNumber, l, skipped)) out.push(t)
  return out
}

function transfersOf(
  network: string,
  blockNumber: bigint,
  log: IndexedBlock['logs'][number],
  skipped: SkippedLog[],
): TokenTransfer[] {
  let out: ReturnType<typeof decodeLog>
  try {
    out = decodeLog(log)
  } catch (err) {
    // decodeLog checks shapes before reading, so this is a bug in it; chain data must still pass.
    out = { ok: false, event: 'unknown', reason: `decoder error: ${(err as Error).message}` }
  }
  if (out.ok) return out.transfers
  skipped.push({ network, blockNumber, log, event: out.event, reason: out.reason })
  return []
}
