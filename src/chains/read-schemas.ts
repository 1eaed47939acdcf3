import { z } from 'zod'
import type { Address, Hash, Hex } from '../types.ts'

/**
 * The shapes of node answers the chain reads (reads.ts) accept, as the Ethereum JSON-RPC
 * specification (ethereum/execution-apis) defines them: data is 0x hex, quantities become
 * bigint, hashes are 32 bytes and addresses 20 bytes (lowercased, as storage keeps them).
 */
export const hex = z
  .string()
  .regex(/^0x[0-9a-fA-F]*$/, 'must be 0x hex')
  .transform((v) => v as Hex)
export const quantity = z
  .string()
  .regex(/^0x[0-9a-fA-F]+$/, 'must be a 0x hex quantity')
  .transform((v) => BigInt(v))
export const hash = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 32-byte hash')
  .transform((v) => v.toLowerCase() as Hash)
export const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be an address')
  .transform((v) => v.toLowerCase() as Address)

/** Contract code; a node that has none may say `0x0` or null: both are `0x`. */
export const code = z.union([hex, z.null()]).transform((v): Hex => (v === null || v === '0x0' ? '0x' : v))

export const transactionSchema = z.object({
  hash,
  from: address,
  to: address.nullable().optional(),
  value: quantity,
  nonce: quantity.optional(),
  input: hex.optional(),
  blockNumber: quantity.nullable().optional(),
  blockHash: hash.nullable().optional(),
  transactionIndex: quantity.nullable().optional(),
})

export type Transaction = z.output<typeof transactionSchema>

export const logSchema = z.object({
  address,
  topics: z.array(hex),
  data: hex,
  blockNumber: quantity,
  blockHash: hash,
  transactionHash: hash,
  logIndex: quantity,
  blockTimestamp: quantity.optional(),
  removed: z.boolean().optional(),
})

export type Log = z.output<typeof logSchema>

export const blockSchema = z.object({
  number: quantity,
  hash,
  parentHash: hash,
  timestamp: quantity,
  gasUsed: quantity.optional(),
  gasLimit: quantity.optional(),
  baseFeePerGas: quantity.optional(),
  transactions: z.array(z.union([hash, transactionSchema])),
})

export type Block = z.output<typeof blockSchema>

/** A pending block (`eth_getBlockByNumber('pending')`): no number or hash yet on some nodes. */
export const pendingBlockSchema = z.object({ transactions: z.array(z.unknown()) })

export const receiptSchema = z.object({
  transactionHash: hash,
  blockNumber: quantity,
  blockHash: hash,
  /** 0x1 success, 0x0 reverted (EIP-658); absent on pre-Byzantium receipts. */
  status: quantity.optional(),
  gasUsed: quantity.optional(),
  logs: z.array(logSchema),
})

export type Receipt = z.output<typeof receiptSchema>

/**
 * A receipt as eth_getBlockReceipts lists it, read for its status only: the logs are left
 * unchecked (a full block's logs come from eth_getLogs, and checking them twice costs).
 */
export const receiptStatusSchema = z.object({
  transactionHash: hash,
  blockNumber: quantity,
  blockHash: hash,
  /** 0x1 success, 0x0 reverted (EIP-658); absent on pre-Byzantium receipts. */
  status: quantity.optional(),
})

export type ReceiptStatus = z.output<typeof receiptStatusSchema>
