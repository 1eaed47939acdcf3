import { getContractAddress } from 'viem'
import { type ChainNode, getBlock, getBlockNumber, getLogs, type Log } from '../chains/reads.ts'
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
  constructor(private readonly node: ChainNode) {}

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
