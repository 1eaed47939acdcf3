import { getTransactionReceipt } from '../chains/reads.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { Hash } from '../types.ts'

export interface ReceiptSummary {
  status: 'success' | 'reverted' | null
  gasUsed: string | null
}

/**
 * Receipt status for mined_transaction events. The indexer follows blocks without receipts, so
 * the matcher asks the node, but only for the few transactions a webhook watches. A node that
 * cannot answer yields nulls rather than holding up the block (the event still goes out).
 */
export class ReceiptReader {
  constructor(private readonly networks: NetworkRegistry) {}

  async get(network: string, hash: Hash): Promise<ReceiptSummary> {
    try {
      const r = await getTransactionReceipt(this.networks.getBySlug(network), hash)
      if (!r) return { status: null, gasUsed: null }
      const status = r.status === 1n ? 'success' : r.status === 0n ? 'reverted' : null
      return { status, gasUsed: r.gasUsed === undefined ? null : r.gasUsed.toString() }
    } catch {
      return { status: null, gasUsed: null }
    }
  }
}
