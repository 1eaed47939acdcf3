import { getContractAddress } from 'viem'
import {
  type ChainNode,
  getBlock,
  getBlockNumber,
  getBlockReceipts,
  getLogs,
  getTransactionReceipt,
  type Log,
  methodRefused,
  type ReceiptStatus,
} from '../chains/reads.ts'
import type { RequestBudget } from '../common/request-budget.ts'
import { type Hash, toLowerAddress } from '../types.ts'
import type { BlockHeader, IndexedLog, IndexedTransaction } from './types.ts'

/** The chain reads the indexer needs (chains/reads.ts), in the indexer's shapes. */

export interface ChainHeader extends BlockHeader {
  /** Present when fetched with full transactions. */
  transactions?: IndexedTransaction[]
}

export interface ChainLog extends IndexedLog {
  blockNumber: bigint
  blockHash: Hash
  blockTimestamp: number | undefined
}

export class ChainReader {
  private readonly node: ChainNode
  /** Whether the node answers eth_getBlockReceipts: false after its first refusal, for good. */
  private blockReceiptsOffered = true
  /** Whether the node has answered eth_getBlockReceipts once (with receipts or a refusal). */
  private blockReceiptsAnswered = false
  /** The first ask, while it is in flight. */
  private firstAsk: Promise<void> | undefined

  /** Every read goes through `budget` when given (the network's request budget). */
  constructor(node: ChainNode, budget?: RequestBudget) {
    this.node = budget
      ? {
          chain: node.chain,
          network: node.network,
          pool: { call: (method, params, opts) => budget.run(() => node.pool.call(method, params, opts)) },
        }
      : node
  }

  blockNumber(): Promise<bigint> {
    return getBlockNumber(this.node)
  }

  /** The block at `tag`, or null when the node does not have it (yet). */
  async header(tag: bigint | 'latest', full = false): Promise<ChainHeader | null> {
    const b = await getBlock(this.node, tag, full)
    if (b === null) return null
    const header: ChainHeader = {
      number: b.number,
      hash: b.hash,
      parentHash: b.parentHash,
      timestamp: Number(b.timestamp),
      gasUsed: b.gasUsed,
      transactionCount: b.transactions.length,
    }
    if (full) {
      header.transactions = b.transactions.map((t) => {
        if (typeof t === 'string') throw new Error('eth_getBlockByNumber returned hashes for a full block')
        const tx: IndexedTransaction = {
          hash: t.hash,
          from: t.from,
          to: t.to ?? null,
          value: t.value,
          index: Number(t.transactionIndex ?? 0n),
          input: t.input ?? '0x',
        }
        // A creation's address follows from sender and nonce (CREATE): no receipt needed.
        if (tx.to === null && t.nonce !== undefined)
          tx.created = toLowerAddress(getContractAddress({ from: t.from, nonce: t.nonce }))
        return tx
      })
    }
    return header
  }

  /**
   * The block's receipts by number (eth_getBlockReceipts), to start beside the block itself:
   * undefined when the node does not offer the method (then remembered, and never asked again),
   * null when it does not have the block.
   */
  async blockReceipts(n: bigint): Promise<ReceiptStatus[] | null | undefined> {
    // Until the node first answers, one call asks and the others wait for what it learns
    // (sixteen blocks read at once would otherwise be sixteen refusals).
    while (this.firstAsk) await this.firstAsk.catch(() => {})
    if (!this.blockReceiptsOffered) return undefined
    const ask = getBlockReceipts(this.node, n).catch((err: unknown) => {
      if (!methodRefused(err)) throw err
      this.blockReceiptsOffered = false
      return undefined
    })
    if (!this.blockReceiptsAnswered) {
      this.firstAsk = ask.then(
        () => {
          this.blockReceiptsAnswered = true
        },
        () => {},
      )
      void this.firstAsk.finally(() => {
        this.firstAsk = undefined
      })
    }
    return ask
  }

  /**
   * Sets each transaction's `reverted` from its receipt: from `early` (blockReceipts read
   * beside the block) or asked now, one receipt per transaction where the node has no
   * eth_getBlockReceipts. False when the receipts are of another block than `block` (replaced
   * between the answers) or missing: the caller tries the step again.
   */
  async markReverted(
    block: ChainHeader,
    early?: { receipts: ReceiptStatus[] | null | undefined },
  ): Promise<boolean> {
    const txs = block.transactions ?? []
    if (txs.length === 0) return true
    let receipts = early ? early.receipts : await this.blockReceipts(block.number)
    if (receipts === undefined) {
      const one = await Promise.all(txs.map((t) => getTransactionReceipt(this.node, t.hash)))
      if (one.some((r) => r === null)) return false
      receipts = one as ReceiptStatus[]
    }
    if (receipts === null) return false
    const byHash = new Map<string, ReceiptStatus>()
    for (const r of receipts) {
      if (r.blockHash !== block.hash) return false
      byHash.set(r.transactionHash, r)
    }
    for (const t of txs) {
      const r = byHash.get(t.hash.toLowerCase())
      if (!r) return false
      // EIP-658 status; a pre-Byzantium receipt has none and is taken as not reverted.
      t.reverted = r.status === 0n
    }
    return true
  }

  async logsByRange(from: bigint, to: bigint): Promise<ChainLog[]> {
    return toChainLogs(await getLogs(this.node, { fromBlock: from, toBlock: to }))
  }

  async logsByBlockHash(blockHash: Hash): Promise<ChainLog[]> {
    return toChainLogs(await getLogs(this.node, { blockHash }))
  }
}

function toChainLogs(logs: readonly Log[]): ChainLog[] {
  return logs
    .filter((l) => !l.removed)
    .map((l) => ({
      address: l.address,
      topics: l.topics,
      data: l.data,
      txHash: l.transactionHash,
      logIndex: Number(l.logIndex),
      blockNumber: l.blockNumber,
      blockHash: l.blockHash,
      blockTimestamp: l.blockTimestamp === undefined ? undefined : Number(l.blockTimestamp),
    }))
}
