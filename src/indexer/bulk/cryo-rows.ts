import { getContractAddress } from 'viem'
import { z } from 'zod'
import { describeZodError } from '../../common/validation.ts'
import { invalidRequest } from '../../errors.ts'
import type { Address, Hash, Hex } from '../../types.ts'
import type { ChainLog } from '../chain.ts'
import type { InternalTransfer } from '../traces.ts'
import type { IndexedTransaction } from '../types.ts'

/**
 * Rows of cryo's datasets (paradigmxyz/cryo) as Halyard's shapes. cryo writes hashes and
 * addresses as binary (or 0x-hex strings with --hex), numbers as integers, and 256-bit values
 * in the encodings its --u256-types asks for: `value_binary` (32 bytes, big-endian),
 * `value_string` (decimal), or a plain `value`; traces carry `action_value` as a decimal string.
 */

const HEX = /^0x[0-9a-fA-F]*$/
const toHex = (b: Uint8Array): Hex => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`
const bytes = z.union([
  z.instanceof(Uint8Array).transform(toHex),
  z
    .string()
    .regex(HEX)
    .transform((s) => s.toLowerCase() as Hex),
])
const sized = (n: number) =>
  bytes.refine((h) => h.length === 2 + 2 * n, `expected ${n} bytes`).transform((h) => h as Hash)
const hash = sized(32)
const address = sized(20).transform((h) => h as Address)
const int = z.union([z.number().int().min(0), z.bigint().min(0n)]).transform((v) => BigInt(v))
const small = int.transform((v) => Number(v))
/** A 256-bit quantity: decimal or 0x-hex string, 32-byte big-endian binary, or an integer. */
const u256 = z
  .union([
    z.string().regex(/^(\d+|0x[0-9a-fA-F]*)$/),
    z.instanceof(Uint8Array).transform(toHex),
    z.number().int().min(0),
    z.bigint().min(0n),
  ])
  .transform((v) => (v === '0x' ? 0n : BigInt(v)))

const blockRow = z.object({
  block_number: int,
  block_hash: hash,
  parent_hash: hash,
  timestamp: small,
  gas_used: int.nullish(),
})

const txRow = z.object({
  block_number: int,
  transaction_index: small,
  transaction_hash: hash,
  nonce: int.nullish(),
  from_address: address,
  to_address: address.nullish(),
  value: u256.nullish(),
  value_string: u256.nullish(),
  value_binary: u256.nullish(),
  input: bytes.nullish(),
  success: z.boolean().nullish(),
})

const logRow = z.object({
  block_number: int,
  block_hash: hash.nullish(),
  log_index: small,
  transaction_hash: hash,
  address,
  topic0: hash.nullish(),
  topic1: hash.nullish(),
  topic2: hash.nullish(),
  topic3: hash.nullish(),
  data: bytes,
})

const traceRow = z.object({
  block_number: int,
  transaction_hash: hash.nullish(),
  transaction_position: small.nullish(),
  action_type: z.string(),
  action_call_type: z.string().nullish(),
  action_from: address.nullish(),
  action_to: address.nullish(),
  action_value: u256.nullish(),
  action_value_string: u256.nullish(),
  action_value_binary: u256.nullish(),
  result_address: address.nullish(),
  trace_address: z.string().regex(/^(\d+(_\d+)*)?$/),
  error: z.string().nullish(),
})

function parse<T extends z.ZodType>(schema: T, row: unknown, where: string): z.output<T> {
  const got = schema.safeParse(row)
  if (!got.success) throw invalidRequest(`${where}: ${describeZodError(got.error)}`)
  return got.data
}

export interface CryoBlock {
  number: bigint
  hash: Hash
  parentHash: Hash
  timestamp: number
  gasUsed: bigint | undefined
}

export function cryoBlock(row: unknown, where: string): CryoBlock {
  const r = parse(blockRow, row, where)
  return {
    number: r.block_number,
    hash: r.block_hash,
    parentHash: r.parent_hash,
    timestamp: r.timestamp,
    gasUsed: r.gas_used ?? undefined,
  }
}

export function cryoTransaction(row: unknown, where: string): { block: bigint; tx: IndexedTransaction } {
  const r = parse(txRow, row, where)
  const value = r.value_string ?? r.value_binary ?? r.value
  if (value === null || value === undefined) throw invalidRequest(`${where}: no value column`)
  const tx: IndexedTransaction = {
    hash: r.transaction_hash,
    from: r.from_address,
    to: r.to_address ?? null,
    value,
    index: r.transaction_index,
    input: r.input ?? '0x',
  }
  if (r.success !== null && r.success !== undefined) tx.success = r.success
  // As the RPC path (chain.ts): a creation's address follows from sender and nonce.
  if (tx.to === null && r.nonce !== null && r.nonce !== undefined)
    tx.created = getContractAddress({ from: tx.from, nonce: r.nonce }).toLowerCase() as Address
  return { block: r.block_number, tx }
}

/** A log; its block hash and timestamp come from the block (cryo's logs may omit them). */
export function cryoLog(
  row: unknown,
  where: string,
): { block: bigint; log: Omit<ChainLog, 'blockHash' | 'blockTimestamp'> } {
  const r = parse(logRow, row, where)
  const topics = [r.topic0, r.topic1, r.topic2, r.topic3]
  const end = topics.findIndex((t) => t === null || t === undefined)
  return {
    block: r.block_number,
    log: {
      address: r.address,
      topics: (end < 0 ? topics : topics.slice(0, end)) as Hash[],
      data: r.data,
      txHash: r.transaction_hash,
      logIndex: r.log_index,
      blockNumber: r.block_number,
    },
  }
}

export interface CryoTrace {
  block: bigint
  txHash: Hash | undefined
  txPosition: number
  path: number[]
  error: boolean
  /** The value-moving frame, when it is one (traces.ts fromTraceBlock's rules). */
  transfer: Omit<InternalTransfer, 'txHash' | 'path'> | undefined
}

export function cryoTrace(row: unknown, where: string): CryoTrace {
  const r = parse(traceRow, row, where)
  const value = r.action_value_string ?? r.action_value_binary ?? r.action_value ?? 0n
  const path = r.trace_address === '' ? [] : r.trace_address.split('_').map(Number)
  let to = r.action_to ?? undefined
  let callType: string = r.action_type
  let moves = true
  if (r.action_type === 'call') {
    const ct = (r.action_call_type ?? '').replace('_', '')
    moves = ct === 'call' || ct === 'callcode'
    callType = ct
  } else if (r.action_type === 'create') {
    to = r.result_address ?? undefined
  } else if (r.action_type === 'suicide') {
    callType = 'selfdestruct'
  } else moves = false
  const from = r.action_from ?? undefined
  const transfer =
    moves && value > 0n && to !== undefined && from !== undefined && path.length > 0
      ? { from, to, value, callType }
      : undefined
  return {
    block: r.block_number,
    txHash: r.transaction_hash ?? undefined,
    txPosition: r.transaction_position ?? 0,
    path,
    error: r.error !== null && r.error !== undefined,
    transfer,
  }
}
