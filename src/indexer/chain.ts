import { getContractAddress } from 'viem'
import { z } from 'zod'
import type { UpstreamPool } from '../chains/upstream-pool.ts'
import { describeZodError } from '../shared/validation.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { IndexedLog, IndexedTransaction } from './types.ts'

/** Typed reads of the chain the indexer needs, each upstream answer checked with zod. */

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/, 'must be 0x hex')
const quantity = hex.transform((v) => BigInt(v))
const hash = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 32-byte hash')
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be an address')
  .transform((v) => v.toLowerCase() as Address)

const txSchema = z.object({
  hash,
  from: address,
  to: address.nullable().optional(),
  value: quantity,
  transactionIndex: quantity,
  input: hex.optional(),
  nonce: quantity.optional(),
})

const headerSchema = z.object({
  number: quantity,
  hash,
  parentHash: hash,
  timestamp: quantity,
  gasUsed: quantity.optional(),
  transactions: z.array(z.union([hash, txSchema])),
})

const logSchema = z.object({
  address,
  topics: z.array(hash),
  data: hex,
  blockNumber: quantity,
  blockHash: hash,
  transactionHash: hash,
  logIndex: quantity,
  blockTimestamp: quantity.optional(),
  removed: z.boolean().optional(),
})

export interface ChainHeader {
  number: bigint
  hash: Hash
  parentHash: Hash
  timestamp: number
  /** Gas used by the block and its transaction count (webhooks' new_block events). */
  gasUsed?: bigint
  transactionCount?: number
  /** Present when fetched with full transactions. */
  transactions?: IndexedTransaction[]
}

export interface ChainLog extends IndexedLog {
  blockNumber: bigint
  blockHash: Hash
  blockTimestamp: number | undefined
}

/** An upstream answered with a JSON-RPC error (the node refused, e.g. a range too large). */
export class ChainRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method} failed (${code}): ${message}`)
    this.name = 'ChainRpcError'
  }
}

export class ChainReader {
  constructor(private readonly pool: UpstreamPool) {}

  async call(method: string, params: readonly unknown[]): Promise<unknown> {
    const out = await this.pool.call(method, params)
    if (out.error) throw new ChainRpcError(method, out.error.code, out.error.message)
    return out.result
  }

  async blockNumber(): Promise<bigint> {
    return parse(quantity, await this.call('eth_blockNumber', []), 'eth_blockNumber')
  }

  /** The block at `tag`, or null when the node does not have it (yet). */
  async header(tag: bigint | 'latest', full = false): Promise<ChainHeader | null> {
    const raw = await this.call('eth_getBlockByNumber', [toTag(tag), full])
    if (raw === null) return null
    const b = parse(headerSchema, raw, 'eth_getBlockByNumber')
    const header: ChainHeader = {
      number: b.number,
      hash: b.hash as Hash,
      parentHash: b.parentHash as Hash,
      timestamp: Number(b.timestamp),
      gasUsed: b.gasUsed,
      transactionCount: b.transactions.length,
    }
    if (full) {
      header.transactions = b.transactions.map((t) => {
        if (typeof t === 'string') throw new Error('eth_getBlockByNumber returned hashes for a full block')
        const tx: IndexedTransaction = {
          hash: t.hash as Hash,
          from: t.from,
          to: t.to ?? null,
          value: t.value,
          index: Number(t.transactionIndex),
          input: (t.input ?? '0x') as Hex,
        }
        // A creation's address follows from sender and nonce (CREATE): no receipt needed.
        if (tx.to === null && t.nonce !== undefined)
          tx.created = getContractAddress({ from: t.from, nonce: t.nonce }).toLowerCase() as Address
        return tx
      })
    }
    return header
  }

  async logsByRange(from: bigint, to: bigint): Promise<ChainLog[]> {
    const raw = await this.call('eth_getLogs', [{ fromBlock: toTag(from), toBlock: toTag(to) }])
    return parseLogs(raw)
  }

  async logsByBlockHash(blockHash: Hash): Promise<ChainLog[]> {
    return parseLogs(await this.call('eth_getLogs', [{ blockHash }]))
  }
}

function parseLogs(raw: unknown): ChainLog[] {
  const logs = parse(z.array(logSchema), raw, 'eth_getLogs')
  return logs
    .filter((l) => !l.removed)
    .map((l) => ({
      address: l.address,
      topics: l.topics as Hex[],
      data: l.data as Hex,
      txHash: l.transactionHash as Hash,
      logIndex: Number(l.logIndex),
      blockNumber: l.blockNumber,
      blockHash: l.blockHash as Hash,
      blockTimestamp: l.blockTimestamp === undefined ? undefined : Number(l.blockTimestamp),
    }))
}

const toTag = (v: bigint | 'latest') => (v === 'latest' ? v : `0x${v.toString(16)}`)

function parse<T extends z.ZodTypeAny>(schema: T, raw: unknown, method: string): z.output<T> {
  const r = schema.safeParse(raw)
  if (!r.success) throw new Error(`unexpected ${method} answer from upstream: ${describeZodError(r.error)}`)
  return r.data
}
