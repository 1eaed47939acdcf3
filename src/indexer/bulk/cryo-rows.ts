import { getContractAddress } from 'viem'
import { invalidRequest } from '../../errors.ts'
import type { Address, Hash, Hex } from '../../types.ts'
import type { ChainLog } from '../chain.ts'
import { DECODED_TOPICS } from '../decode.ts'
import type { InternalTransfer } from '../traces.ts'
import type { IndexedTransaction } from '../types.ts'

/**
 * Rows of cryo's datasets (paradigmxyz/cryo) as Halyard's shapes. cryo writes hashes and
 * addresses as binary (or 0x-hex strings with --hex), numbers as integers, and 256-bit values
 * in the encodings its --u256-types asks for: `value_binary` (32 bytes, big-endian),
 * `value_string` (decimal), or a plain `value`; traces carry `action_value` as a decimal string.
 *
 * Checked by hand, not by a schema library: an import decodes hundreds of thousands of rows a
 * second, and a generic validator's allocations per field were most of the import's time
 * (docs/benchmarks.md). Each check still names the file row and column it refuses.
 */

type Row = Record<string, unknown>

/** Where a bad value sits, built only when a row is refused. */
export interface RowAt {
  dataset: string
  row: number
}

function bad(at: RowAt, column: string, expected: string): never {
  throw invalidRequest(`${at.dataset} row ${at.row}: ${column}: expected ${expected}`)
}

const HEX = /^0x[0-9a-fA-F]*$/

/**
 * Node's own hex encoder, called on the Parquet reader's byte views directly: `Buffer.from(…)`
 * first wrapped each of the ≈ 400,000 values of a 100-block import in a Buffer object of its
 * own, garbage for the collector (docs/benchmarks.md). Buffer.prototype.hexSlice is what
 * `toString('hex')` calls; a Node without it gets that path.
 */
const hexSlice = (
  Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }
).hexSlice

function bytesHex(v: Uint8Array): string {
  return hexSlice
    ? hexSlice.call(v, 0, v.byteLength)
    : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')
}

function hexOf(v: unknown, at: RowAt, column: string): Hex {
  if (v instanceof Uint8Array) return `0x${bytesHex(v)}` as Hex
  if (typeof v === 'string' && HEX.test(v)) return v.toLowerCase() as Hex
  return bad(at, column, 'bytes or 0x-hex text')
}

function sized<T extends Hex>(v: unknown, n: number, at: RowAt, column: string): T {
  const bytes = v instanceof Uint8Array ? v.byteLength : typeof v === 'string' ? (v.length - 2) / 2 : -1
  if (bytes !== n) return bad(at, column, `${n} bytes`)
  return hexOf(v, at, column) as T
}

function optSized<T extends Hex>(v: unknown, n: number, at: RowAt, column: string): T | undefined {
  return v === null || v === undefined ? undefined : sized<T>(v, n, at, column)
}

function int(v: unknown, at: RowAt, column: string): bigint {
  if (typeof v === 'bigint' && v >= 0n) return v
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return BigInt(v)
  return bad(at, column, 'a non-negative integer')
}

function small(v: unknown, at: RowAt, column: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v
  if (typeof v === 'bigint' && v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v)
  return bad(at, column, 'a non-negative integer')
}

const U256_TEXT = /^(\d+|0x[0-9a-fA-F]*)$/

/** A 256-bit quantity: decimal or 0x-hex string, 32-byte big-endian binary, or an integer. */
function u256(v: unknown, at: RowAt, column: string): bigint | undefined {
  if (v === null || v === undefined) return undefined
  if (typeof v === 'bigint' && v >= 0n) return v
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return BigInt(v)
  if (typeof v === 'string' && U256_TEXT.test(v)) return v === '0x' ? 0n : BigInt(v)
  if (v instanceof Uint8Array) {
    if (v.byteLength === 0) return 0n
    return BigInt(`0x${bytesHex(v)}`)
  }
  return bad(at, column, 'a 256-bit quantity')
}

/** The columns each reader uses: the Parquet reader decodes only these (those present). */
export const CRYO_COLUMNS = {
  blocks: ['block_number', 'block_hash', 'parent_hash', 'timestamp', 'gas_used'],
  transactions: [
    'block_number',
    'transaction_index',
    'transaction_hash',
    'nonce',
    'from_address',
    'to_address',
    'value',
    'value_string',
    'value_binary',
    'input',
    'success',
  ],
  logs: [
    'block_number',
    'log_index',
    'transaction_hash',
    'address',
    'topic0',
    'topic1',
    'topic2',
    'topic3',
    'data',
  ],
  traces: [
    'block_number',
    'transaction_hash',
    'transaction_position',
    'action_type',
    'action_call_type',
    'action_from',
    'action_to',
    'action_value',
    'action_value_string',
    'action_value_binary',
    'result_address',
    'trace_address',
    'error',
  ],
} as const

export interface CryoBlock {
  number: bigint
  hash: Hash
  parentHash: Hash
  timestamp: number
  gasUsed: bigint | undefined
}

export function cryoBlock(r: Row, at: RowAt): CryoBlock {
  return {
    number: int(r.block_number, at, 'block_number'),
    hash: sized(r.block_hash, 32, at, 'block_hash'),
    parentHash: sized(r.parent_hash, 32, at, 'parent_hash'),
    timestamp: small(r.timestamp, at, 'timestamp'),
    gasUsed: r.gas_used === null || r.gas_used === undefined ? undefined : int(r.gas_used, at, 'gas_used'),
  }
}

/** Bytes of calldata kept: the selector, all that any reader of an imported block looks at. */
const SELECTOR = 4

export function cryoTransaction(r: Row, at: RowAt): { block: bigint; tx: IndexedTransaction } {
  const value =
    u256(r.value_string, at, 'value_string') ??
    u256(r.value_binary, at, 'value_binary') ??
    u256(r.value, at, 'value')
  if (value === undefined) throw invalidRequest(`${at.dataset} row ${at.row}: no value column`)
  const input = r.input
  const tx: IndexedTransaction = {
    hash: sized(r.transaction_hash, 32, at, 'transaction_hash'),
    from: sized(r.from_address, 20, at, 'from_address'),
    to: optSized<Address>(r.to_address, 20, at, 'to_address') ?? null,
    value,
    index: small(r.transaction_index, at, 'transaction_index'),
    input:
      input === null || input === undefined
        ? '0x'
        : (hexOf(input instanceof Uint8Array ? input.subarray(0, SELECTOR) : input, at, 'input').slice(
            0,
            2 + 2 * SELECTOR,
          ) as Hex),
  }
  if (r.success !== null && r.success !== undefined) {
    if (typeof r.success !== 'boolean') bad(at, 'success', 'a boolean')
    tx.success = r.success
  }
  // As the RPC path (chain.ts): a creation's address follows from sender and nonce.
  if (tx.to === null && r.nonce !== null && r.nonce !== undefined)
    tx.created = getContractAddress({
      from: tx.from,
      nonce: int(r.nonce, at, 'nonce'),
    }).toLowerCase() as Address
  return { block: int(r.block_number, at, 'block_number'), tx }
}

const TOPICS = ['topic0', 'topic1', 'topic2', 'topic3'] as const

/**
 * decode.ts's first topics as bytes. A log under any other first topic yields no row and no
 * skip, so the import checks its columns but never hex-encodes them: at mainnet density two logs
 * in five are not transfers, and their strings were a large part of the decode's garbage.
 */
const READ_TOPIC_BYTES = DECODED_TOPICS.map((t) => Buffer.from(t.slice(2), 'hex'))

function isReadTopic(v: unknown): boolean {
  if (typeof v === 'string') return DECODED_TOPICS.includes(v.toLowerCase())
  if (!(v instanceof Uint8Array) || v.byteLength !== 32) return false
  for (const t of READ_TOPIC_BYTES) {
    let i = 0
    while (i < 32 && t[i] === v[i]) i++
    if (i === 32) return true
  }
  return false
}

/** The checks `sized` makes, without building the value. */
function checkSized(v: unknown, n: number, at: RowAt, column: string): void {
  const bytes = v instanceof Uint8Array ? v.byteLength : typeof v === 'string' ? (v.length - 2) / 2 : -1
  if (bytes !== n) bad(at, column, `${n} bytes`)
  if (typeof v === 'string' && !HEX.test(v)) bad(at, column, 'bytes or 0x-hex text')
}

/**
 * A log of `block` (the caller has read the row's block_number), or undefined when the log is
 * well-formed but its first topic is none decode.ts reads: no transfer can come of it.
 */
export function cryoLog(
  r: Row,
  at: RowAt,
  block: { number: bigint; hash: Hash; timestamp: number },
): ChainLog | undefined {
  const logIndex = small(r.log_index, at, 'log_index')
  if (!isReadTopic(r.topic0)) {
    for (const name of TOPICS) {
      const t = r[name]
      if (t === null || t === undefined) break
      checkSized(t, 32, at, name)
    }
    checkSized(r.address, 20, at, 'address')
    if (!(r.data instanceof Uint8Array)) hexOf(r.data, at, 'data')
    checkSized(r.transaction_hash, 32, at, 'transaction_hash')
    return undefined
  }
  const topics: Hash[] = []
  for (const name of TOPICS) {
    const t = optSized<Hash>(r[name], 32, at, name)
    if (t === undefined) break
    topics.push(t)
  }
  return {
    address: sized(r.address, 20, at, 'address'),
    topics,
    data: hexOf(r.data, at, 'data'),
    txHash: sized(r.transaction_hash, 32, at, 'transaction_hash'),
    logIndex,
    blockNumber: block.number,
    blockHash: block.hash,
    blockTimestamp: block.timestamp,
  }
}

/** A row's block_number, checked (to group a file's rows by block before reading them). */
export function cryoBlockNumber(r: Row, at: RowAt): bigint {
  return int(r.block_number, at, 'block_number')
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

const TRACE_ADDRESS = /^(\d+(_\d+)*)?$/

function optText(v: unknown, at: RowAt, column: string): string | undefined {
  if (v === null || v === undefined) return undefined
  if (typeof v === 'string') return v
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8')
  return bad(at, column, 'text')
}

export function cryoTrace(r: Row, at: RowAt): CryoTrace {
  const type = optText(r.action_type, at, 'action_type') ?? bad(at, 'action_type', 'text')
  const traceAddress = optText(r.trace_address, at, 'trace_address') ?? bad(at, 'trace_address', 'text')
  if (!TRACE_ADDRESS.test(traceAddress)) bad(at, 'trace_address', 'numbers joined by _')
  const value =
    u256(r.action_value_string, at, 'action_value_string') ??
    u256(r.action_value_binary, at, 'action_value_binary') ??
    u256(r.action_value, at, 'action_value') ??
    0n
  const path = traceAddress === '' ? [] : traceAddress.split('_').map(Number)
  let to = optSized<Address>(r.action_to, 20, at, 'action_to')
  let callType: string = type
  let moves = true
  if (type === 'call') {
    const ct = (optText(r.action_call_type, at, 'action_call_type') ?? '').replace('_', '')
    moves = ct === 'call' || ct === 'callcode'
    callType = ct
  } else if (type === 'create') {
    to = optSized<Address>(r.result_address, 20, at, 'result_address')
  } else if (type === 'suicide') {
    callType = 'selfdestruct'
  } else moves = false
  const from = optSized<Address>(r.action_from, 20, at, 'action_from')
  const transfer =
    moves && value > 0n && to !== undefined && from !== undefined && path.length > 0
      ? { from, to, value, callType }
      : undefined
  const position = r.transaction_position
  return {
    block: int(r.block_number, at, 'block_number'),
    txHash: optSized<Hash>(r.transaction_hash, 32, at, 'transaction_hash'),
    txPosition: position === null || position === undefined ? 0 : small(position, at, 'transaction_position'),
    path,
    error: r.error !== null && r.error !== undefined,
    transfer,
  }
}
