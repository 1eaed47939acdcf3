import type { IndexedBlock, IndexedLog, IndexedTransaction, TokenTransfer } from '../indexer/types.ts'
import type { EventType, WebhookConfig } from './config.ts'
import { camelData, type DeliveryFormat, formatUnits } from './form-b.ts'
import { transferType } from './nft-metadata.ts'
import type { ReceiptReader } from './receipts.ts'
import type { TokenMetadata } from './token-metadata.ts'
import type { InternalTransfer } from './traces.ts'

/**
 * The `data` of each event type (form A), built for one candidate webhook from the
 * block items its matched keys point at. Payloads of mined_transaction and log are documented in
 * matcher.ts and docs/webhooks.md.
 */

/** A webhook that may match, with its parsed config and the row version it came from. */
export interface Candidate {
  id: string
  version: string
  /** Delivery form, 'A' or 'B' (form-b.ts). */
  format: DeliveryFormat
  /** The owning account (the daily quota is per account). */
  accountId?: string
  eventType: EventType
  cfg: WebhookConfig
  sets: { addresses?: Set<string>; contracts?: Set<string>; txs?: Set<string>; selectors?: Set<string> }
}

/** One event before it gets its id and envelope. */
export interface Draft {
  webhookId: string
  eventType: EventType
  /** [transaction index, log index or -1] — block order within the block. */
  order: [number, number]
  data: Record<string, unknown>
  /** Form B `data` where form B has its own shape (TOKEN_TRANSFER); else camelData(data). */
  dataB?: Record<string, unknown>
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
    /** The block's internal transfers, when a candidate wants them (traces.ts). */
    internal: readonly InternalTransfer[] = [],
  ): Promise<void> {
    switch (c.eventType) {
      case 'new_block':
        return this.newBlock(c, block, out)
      case 'internal_transfer':
        return this.internalTransfers(c, block, internal, out, txIndex)
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

  private newBlock(c: Candidate, block: IndexedBlock, out: Draft[]) {
    out.push({
      webhookId: c.id,
      eventType: 'new_block',
      order: [-1, -1],
      data: {
        chain: block.network,
        block_number: Number(block.number),
        block_hash: block.hash,
        parent_hash: block.parentHash,
        timestamp: block.timestamp,
        gas_used: block.gasUsed?.toString() ?? null,
        transaction_count: block.transactionCount ?? block.transactions?.length ?? null,
      },
    })
  }

  private internalTransfers(
    c: Candidate,
    block: IndexedBlock,
    internal: readonly InternalTransfer[],
    out: Draft[],
    txIndex: Map<string, number>,
  ) {
    const watched = c.sets.addresses
    const side = c.cfg.address_match ?? 'either'
    const min = c.cfg.min_value === undefined ? 0n : BigInt(c.cfg.min_value)
    internal.forEach((t, k) => {
      if (t.value < min) return
      if (watched) {
        const from = side !== 'to' && watched.has(t.from)
        const to = side !== 'from' && watched.has(t.to)
        if (!from && !to) return
      }
      out.push({
        webhookId: c.id,
        eventType: 'internal_transfer',
        order: [txIndex.get(t.txHash) ?? 0, 5_000_000 + k],
        data: {
          ...this.base(block, t.txHash),
          from: t.from,
          to: t.to,
          value: t.value.toString(),
          asset: this.nativeSymbol(block.network),
          call_type: t.callType,
          trace_path: t.path.join('.'),
        },
      })
    })
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
    const side = c.cfg.address_match ?? 'either'
    const min = c.cfg.min_value === undefined ? 0n : BigInt(c.cfg.min_value)
    const sidesOf = (from: string, to: string | null) => {
      const sides: Array<'outgoing' | 'incoming'> = []
      if (side !== 'to' && watched.has(from)) sides.push('outgoing')
      if (side !== 'from' && to && watched.has(to)) sides.push('incoming')
      return sides
    }
    // Selector filter: the 4-byte selector of the transaction the activity belongs to.
    let selectorOf: ((txHash: string) => string) | undefined
    if (c.sets.selectors) {
      const inputs = new Map<string, string>(
        (block.transactions ?? []).map((t) => [t.hash, t.input.slice(0, 10).toLowerCase()]),
      )
      selectorOf = (h) => inputs.get(h) ?? ''
    }
    const selectors = c.sets.selectors
    for (const t of txs) {
      // A reverted transaction moved no value (src/indexer/native.ts keeps no row for it either).
      if (t.reverted) continue
      if (t.value < min || (selectors && !selectors.has(selectorOf?.(t.hash) ?? ''))) continue
      for (const direction of sidesOf(t.from, t.to)) {
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
      if (t.standard !== 'ERC20' || t.value < min) continue
      if (selectors && !selectors.has(selectorOf?.(t.txHash) ?? '')) continue
      const sides = sidesOf(t.from, t.to)
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
    const watched = c.sets.addresses
    if (!watched) return true
    switch (c.cfg.address_match ?? 'either') {
      case 'from':
        return watched.has(t.from)
      case 'to':
        return watched.has(t.to)
      default:
        return watched.has(t.from) || watched.has(t.to)
    }
  }

  private async tokenTransfers(
    c: Candidate,
    block: IndexedBlock,
    out: Draft[],
    txIndex: Map<string, number>,
  ) {
    const min = c.cfg.min_value === undefined ? 0n : BigInt(c.cfg.min_value)
    const perContract = c.cfg.min_value_per_contract
    for (const t of block.transfers) {
      if (t.standard !== 'ERC20' || !this.passesTransferFilter(c, t)) continue
      const floor = perContract?.[t.contract]
      if (t.value < (floor === undefined ? min : BigInt(floor))) continue
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
        dataB: {
          blockNumber: Number(block.number),
          transactionHash: t.txHash,
          logIndex: t.logIndex,
          from: t.from,
          to: t.to,
          token: { address: t.contract, symbol: meta.symbol, decimals: meta.decimals },
          value: t.value.toString(),
          valueFormatted: formatUnits(t.value, meta.decimals),
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
      const d = out[out.length - 1] as Draft
      // Form B: the sender adds `metadata` before each attempt (nft-metadata.ts).
      d.dataB = { ...camelData(d.data), transferType: transferType(t.from, t.to) }
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

export function candidate(
  id: string,
  eventType: EventType,
  configText: string,
  version: string,
  format: DeliveryFormat = 'A',
  accountId?: string,
): Candidate {
  const cfg = JSON.parse(configText) as WebhookConfig
  return {
    id,
    version,
    format,
    accountId,
    eventType,
    cfg,
    sets: {
      addresses: cfg.addresses?.length ? new Set(cfg.addresses) : undefined,
      contracts: cfg.contracts?.length ? new Set(cfg.contracts) : undefined,
      txs: cfg.tx_hashes?.length ? new Set(cfg.tx_hashes) : undefined,
      selectors: cfg.selectors?.length ? new Set(cfg.selectors) : undefined,
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
