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
  const sorted = [...logs].sort((a, b) => a.logIndex - b.logIndex)
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
    transfers: sorted.flatMap((l) => transfersOf(net.slug, block.number, l, skipped)),
  }
  if (block.transactions) indexed.transactions = block.transactions
  if (block.gasUsed !== undefined) indexed.gasUsed = block.gasUsed
  if (block.transactionCount !== undefined) indexed.transactionCount = block.transactionCount
  if (internal) indexed.internalTransfers = internal
  return indexed
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
