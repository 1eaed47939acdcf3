import type { IndexedBlock, IndexedLog, IndexedTransaction, TokenTransfer } from '../indexer/types.ts'
import type { EventType, WebhookConfig } from './config.ts'
import type { ReceiptReader } from './receipts.ts'
import type { TokenMetadata } from './token-metadata.ts'

/**
 * The `data` of each event type (spec 6.1 form A), built for one candidate webhook from the
 * block items its matched keys point at. Payloads the spec leaves open are documented in
 * matcher.ts and README "Webhooks".
 */

/** A webhook that may match, with its parsed config and the row version it came from. */
export interface Candidate {
  id: string
  version: string
  eventType: EventType
  cfg: WebhookConfig
  sets: { addresses?: Set<string>; contracts?: Set<string>; txs?: Set<string> }
}

/** One event before it gets its id and envelope. */
export interface Draft {
  webhookId: string
  eventType: EventType
  /** [transaction index, log index or -1] — block order within the block. */
  order: [number, number]
  data: Record<string, unknown>
}

export class EventDrafter {
  constructor(
    private readonly tokens: TokenMetadata,
    private readonly receipts: ReceiptReader,
    private readonly nativeSymbol: (network: string) => string,
  ) {}

  /** Appends `c`'s events in `block` (already narrowed to the items its keys point at) to `out`. */
  async draft(
    c: Candidate,
    block: IndexedBlock,
    txs: IndexedTransaction[],
    out: Draft[],
    txIndex: Map<string, number>,
  ): Promise<void> {
    switch (c.eventType) {
      case 'address_activity':
        return this.addressActivity(c, block, txs, out, txIndex)
      case 'token_transfer':
        return this.tokenTransfers(c, block, out, txIndex)
      case 'nft_transfer':
        return this.nftTransfers(c, block, out, txIndex)
      case 'mined_transaction':
        return this.minedTransactions(c, block, txs, out)
      case 'log':
        return this.logs(c, block, out, txIndex)
    }
  }

  private base(block: IndexedBlock, txHash: string) {
    return { chain: block.network, block_number: Number(block.number), tx_hash: txHash }
  }

  private async addressActivity(
    c: Candidate,
    block: IndexedBlock,
    txs: IndexedTransaction[],
    out: Draft[],
    txIndex: Map<string, number>,
  ) {
    const watched = c.sets.addresses
    if (!watched) return
    for (const t of txs) {
      const sides: Array<'outgoing' | 'incoming'> = []
      if (watched.has(t.from)) sides.push('outgoing')
      if (t.to && watched.has(t.to)) sides.push('incoming')
      for (const direction of sides) {
        out.push({
          webhookId: c.id,
          eventType: 'address_activity',
          order: [t.index, -1],
          data: {
            ...this.base(block, t.hash),
            from: t.from,
            to: t.to,
            value: t.value.toString(),
            asset: this.nativeSymbol(block.network),
            contract: null,
            direction,
          },
        })
      }
    }
    for (const t of block.transfers) {
      if (t.standard !== 'ERC20') continue
      const sides: Array<'outgoing' | 'incoming'> = []
      if (watched.has(t.from)) sides.push('outgoing')
      if (watched.has(t.to)) sides.push('incoming')
      if (sides.length === 0) continue
      const meta = await this.tokens.get(block.network, t.contract)
      for (const direction of sides) {
        out.push({
          webhookId: c.id,
          eventType: 'address_activity',
          order: [txIndex.get(t.txHash) ?? 0, t.logIndex],
          data: {
            ...this.base(block, t.txHash),
            from: t.from,
            to: t.to,
            value: t.value.toString(),
            asset: meta.symbol,
            contract: t.contract,
            direction,
          },
        })
      }
    }
  }

  private passesTransferFilter(c: Candidate, t: TokenTransfer): boolean {
    if (c.sets.contracts && !c.sets.contracts.has(t.contract)) return false
    if (c.sets.addresses && !c.sets.addresses.has(t.from) && !c.sets.addresses.has(t.to)) return false
    return true
  }

  private async tokenTransfers(
    c: Candidate,
    block: IndexedBlock,
    out: Draft[],
    txIndex: Map<string, number>,
  ) {
    const min = c.cfg.min_value === undefined ? 0n : BigInt(c.cfg.min_value)
    for (const t of block.transfers) {
      if (t.standard !== 'ERC20' || !this.passesTransferFilter(c, t) || t.value < min) continue
      const meta = await this.tokens.get(block.network, t.contract)
      out.push({
        webhookId: c.id,
        eventType: 'token_transfer',
        order: [txIndex.get(t.txHash) ?? 0, t.logIndex],
        data: {
          ...this.base(block, t.txHash),
          contract: t.contract,
          from: t.from,
          to: t.to,
          value: t.value.toString(),
          symbol: meta.symbol,
          decimals: meta.decimals,
        },
      })
    }
  }

  private nftTransfers(c: Candidate, block: IndexedBlock, out: Draft[], txIndex: Map<string, number>) {
    for (const t of block.transfers) {
      if (t.standard === 'ERC20' || !this.passesTransferFilter(c, t)) continue
      out.push({
        webhookId: c.id,
        eventType: 'nft_transfer',
        order: [txIndex.get(t.txHash) ?? 0, t.logIndex * 10_000 + t.batchIndex],
        data: {
          ...this.base(block, t.txHash),
          contract: t.contract,
          from: t.from,
          to: t.to,
          token_id: (t.tokenId ?? 0n).toString(),
          standard: t.standard,
          // ERC-1155 quantities beyond 2^53 are reported as the largest safe integer (spec: integer).
          quantity:
            t.standard === 'ERC721'
              ? 1
              : Number(t.value > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : t.value),
        },
      })
    }
  }

  private async minedTransactions(
    c: Candidate,
    block: IndexedBlock,
    txs: IndexedTransaction[],
    out: Draft[],
  ) {
    const wanted = c.sets.txs
    if (!wanted) return
    for (const t of txs) {
      if (!wanted.has(t.hash)) continue
      const receipt =
        t.success === undefined
          ? await this.receipts.get(block.network, t.hash)
          : { status: t.success ? 'success' : 'reverted', gasUsed: null }
      out.push({
        webhookId: c.id,
        eventType: 'mined_transaction',
        order: [t.index, -1],
        data: {
          ...this.base(block, t.hash),
          block_hash: block.hash,
          transaction_index: t.index,
          from: t.from,
          to: t.to,
          value: t.value.toString(),
          status: receipt.status,
          gas_used: receipt.gasUsed,
        },
      })
    }
  }

  private logs(c: Candidate, block: IndexedBlock, out: Draft[], txIndex: Map<string, number>) {
    for (const l of block.logs) {
      if (c.sets.addresses && !c.sets.addresses.has(l.address)) continue
      if (!topicsMatch(c.cfg.topics, l)) continue
      out.push({
        webhookId: c.id,
        eventType: 'log',
        order: [txIndex.get(l.txHash) ?? 0, l.logIndex],
        data: {
          ...this.base(block, l.txHash),
          block_hash: block.hash,
          log_index: l.logIndex,
          address: l.address,
          topics: l.topics.map((t) => t.toLowerCase()),
          data: l.data,
        },
      })
    }
  }
}

export function candidate(id: string, eventType: EventType, configText: string, version: string): Candidate {
  const cfg = JSON.parse(configText) as WebhookConfig
  return {
    id,
    version,
    eventType,
    cfg,
    sets: {
      addresses: cfg.addresses?.length ? new Set(cfg.addresses) : undefined,
      contracts: cfg.contracts?.length ? new Set(cfg.contracts) : undefined,
      txs: cfg.tx_hashes?.length ? new Set(cfg.tx_hashes) : undefined,
    },
  }
}

/** eth_getLogs topic semantics: null = any; a hash = equal; an array = any of them. */
export function topicsMatch(filter: WebhookConfig['topics'], log: IndexedLog): boolean {
  if (!filter) return true
  for (let i = 0; i < filter.length; i++) {
    const want = filter[i]
    if (want === null || want === undefined) continue
    const got = log.topics[i]?.toLowerCase()
    if (got === undefined) return false
    if (Array.isArray(want) ? !want.includes(got as (typeof want)[number]) : want !== got) return false
  }
  return true
}
