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
      const out = await this.networks.getBySlug(network).pool.call('eth_getTransactionReceipt', [hash])
      const r = out.result as { status?: unknown; gasUsed?: unknown } | null | undefined
      if (!r || typeof r !== 'object') return { status: null, gasUsed: null }
      const status = r.status === '0x1' ? 'success' : r.status === '0x0' ? 'reverted' : null
      const gasUsed =
        typeof r.gasUsed === 'string' && /^0x[0-9a-f]+$/i.test(r.gasUsed)
          ? BigInt(r.gasUsed).toString()
          : null
      return { status, gasUsed }
    } catch {
      return { status: null, gasUsed: null }
    }
  }
}
