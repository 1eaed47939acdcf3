import { decodeAbiParameters } from 'viem'
import type { Address, Hex } from '../types.ts'
import type { IndexedLog, TokenTransfer } from './types.ts'

/** Event topics: keccak256 of the event signatures (ERC-20/721 Transfer, ERC-1155 TransferSingle and TransferBatch). */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
export const TRANSFER_SINGLE_TOPIC = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62'
export const TRANSFER_BATCH_TOPIC = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb'

export const ZERO_ADDRESS: Address = '0x0000000000000000000000000000000000000000'

/**
 * Items of one TransferBatch we store. A genuine batch pays at least one storage write per item,
 * which caps it near 10,000 on a 30M-gas block; a log costs only 8 gas a byte, so without a cap
 * one cheap transaction could make every instance insert (and webhook) hundreds of thousands of
 * rows. Larger batches are skipped and counted like any other malformed log.
 */
export const MAX_BATCH_ITEMS = 10_000
/** Two head words, two lengths, two arrays of MAX_BATCH_ITEMS words: anything longer is refused unread. */
const MAX_BATCH_DATA_BYTES = 32 * (4 + 2 * MAX_BATCH_ITEMS)

/** The events this decoder reads, as named in the skip counter and warning. */
type TransferEvent = 'Transfer' | 'TransferSingle' | 'TransferBatch'

/** A log's transfers, or why a log under one of our topics was skipped. */
export type DecodedLog =
  | { ok: true; transfers: TokenTransfer[] }
  | { ok: false; event: string; reason: string }

const NONE: DecodedLog = { ok: true, transfers: [] }
const skip = (event: TransferEvent, reason: string): DecodedLog => ({ ok: false, event, reason })

/**
 * Decodes the token transfers of one log. Anyone can emit any topics and data under these
 * event signatures, so every shape is checked before a value is read: exact topic counts,
 * address topics with clean upper bytes, data lengths in whole words (exact for the fixed
 * layouts), and TransferBatch arrays through viem's bounds-checked ABI decoder after a size cap.
 * A log that fits no standard is reported as skipped, never thrown: one hostile log must not
 * stop a network's indexer. Shapes outside the standards (e.g. the pre-ERC-721 CryptoKitties
 * layout with every field in data) are skipped too.
 */
export function decodeLog(log: IndexedLog): DecodedLog {
  const t0 = log.topics[0]
  if (t0 === TRANSFER_TOPIC) return transfer(log)
  if (t0 === TRANSFER_SINGLE_TOPIC) return transferSingle(log)
  if (t0 === TRANSFER_BATCH_TOPIC) return transferBatch(log)
  return NONE
}

/**
 * The first topics decodeLog reads: a log under any other yields no transfer and no skip, so a
 * reader that must convert every log (the Parquet import) may leave the others unconverted.
 */
export const DECODED_TOPICS: readonly string[] = [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_BATCH_TOPIC]

function transfer(log: IndexedLog): DecodedLog {
  const n = log.topics.length
  if (n !== 3 && n !== 4) return skip('Transfer', `${n} topics (ERC-20 has 3, ERC-721 has 4)`)
  const from = topicAddress(log.topics[1])
  const to = topicAddress(log.topics[2])
  if (!from || !to) return skip('Transfer', 'from/to topic is not an address')
  const bytes = dataBytes(log.data)
  if (n === 3) {
    // An ERC-721 Transfer that lost its indexed token id lands here too: no 32-byte amount.
    if (bytes !== 32) return skip('Transfer', `ERC-20 Transfer with ${describeBytes(bytes)} of data, not 32`)
    return { ok: true, transfers: [base(log, 'ERC20', from, to, BigInt(log.data), null, 0)] }
  }
  if (bytes !== 0) return skip('Transfer', `ERC-721 Transfer with ${describeBytes(bytes)} of data, not 0`)
  return { ok: true, transfers: [base(log, 'ERC721', from, to, 1n, BigInt(log.topics[3] as Hex), 0)] }
}

/**
 * The from and to of an ERC-1155 transfer log (topics: signature, operator, from, to), or the
 * skip the log earns when its topics are not in that shape.
 */
function erc1155Parties(
  log: IndexedLog,
  event: 'TransferSingle' | 'TransferBatch',
): { from: Address; to: Address } | { skipped: DecodedLog } {
  if (log.topics.length !== 4) return { skipped: skip(event, `${log.topics.length} topics, not 4`) }
  const from = topicAddress(log.topics[2])
  const to = topicAddress(log.topics[3])
  if (!from || !to) return { skipped: skip(event, 'from/to topic is not an address') }
  return { from, to }
}

function transferSingle(log: IndexedLog): DecodedLog {
  const parties = erc1155Parties(log, 'TransferSingle')
  if ('skipped' in parties) return parties.skipped
  const { from, to } = parties
  const bytes = dataBytes(log.data)
  if (bytes !== 64) return skip('TransferSingle', `${describeBytes(bytes)} of data, not 64 (id, value)`)
  const id = BigInt(`0x${log.data.slice(2, 66)}`)
  const value = BigInt(`0x${log.data.slice(66, 130)}`)
  return { ok: true, transfers: [base(log, 'ERC1155', from, to, value, id, 0)] }
}

function transferBatch(log: IndexedLog): DecodedLog {
  const parties = erc1155Parties(log, 'TransferBatch')
  if ('skipped' in parties) return parties.skipped
  const { from, to } = parties
  const bytes = dataBytes(log.data)
  if (bytes === null || bytes % 32 !== 0)
    return skip('TransferBatch', `${describeBytes(bytes)} of data, not whole 32-byte words`)
  if (bytes > MAX_BATCH_DATA_BYTES)
    return skip('TransferBatch', `${bytes} bytes of data, more than ${MAX_BATCH_ITEMS} items can need`)
  // The claimed lengths first (two offset words, each pointing at a length word): a batch over the
  // cap is refused by its count before anything is decoded.
  for (const head of [0, 1]) {
    const length = wordAt(log.data, wordAt(log.data, head * 32))
    if (length !== null && length > BigInt(MAX_BATCH_ITEMS))
      return skip('TransferBatch', `${length} items claimed, more than ${MAX_BATCH_ITEMS}`)
  }
  let ids: readonly bigint[]
  let values: readonly bigint[]
  try {
    // Every offset and length is checked against the data by viem (it throws past the end), and
    // the data is capped above, so a hostile length costs at most MAX_BATCH_DATA_BYTES of reading.
    ;[ids, values] = decodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], log.data)
  } catch (err) {
    return skip('TransferBatch', `ids/values do not decode: ${firstLine(err)}`)
  }
  if (ids.length !== values.length)
    return skip('TransferBatch', `${ids.length} ids but ${values.length} values`)
  if (ids.length > MAX_BATCH_ITEMS)
    return skip('TransferBatch', `${ids.length} items, more than ${MAX_BATCH_ITEMS}`)
  return {
    ok: true,
    transfers: ids.map((id, i) => base(log, 'ERC1155', from, to, values[i] as bigint, id, i)),
  }
}

/** The word at byte `offset` (a whole word inside the data), or null. */
function wordAt(data: Hex, offset: bigint | number | null): bigint | null {
  if (offset === null) return null
  const at = BigInt(offset)
  if (at % 32n !== 0n || (at + 32n) * 2n > BigInt(data.length - 2)) return null
  const start = 2 + Number(at) * 2
  return BigInt(`0x${data.slice(start, start + 64)}`)
}

/** A 32-byte topic holding an address (upper 12 bytes zero), lowercase; null otherwise. */
export function topicAddress(topic: Hex | undefined): Address | null {
  if (topic === undefined || topic.length !== 66 || !/^0x0{24}[0-9a-fA-F]{40}$/.test(topic)) return null
  const address: Hex = `0x${topic.slice(26).toLowerCase()}`
  return address
}

/** Byte length of 0x-hex data; null when it is not whole bytes. */
function dataBytes(data: Hex): number | null {
  const chars = data.length - 2
  return chars % 2 === 0 ? chars / 2 : null
}

const describeBytes = (n: number | null) => (n === null ? 'a partial byte' : `${n} bytes`)

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return (msg.split('\n')[0] ?? '').slice(0, 200)
}

function base(
  log: IndexedLog,
  standard: TokenTransfer['standard'],
  from: Address,
  to: Address,
  value: bigint,
  tokenId: bigint | null,
  batchIndex: number,
): TokenTransfer {
  return {
    standard,
    contract: log.address,
    from,
    to,
    value,
    tokenId,
    txHash: log.txHash,
    logIndex: log.logIndex,
    batchIndex,
  }
}
