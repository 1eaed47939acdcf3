import type { Address, Hex } from '../types.ts'
import type { IndexedLog, TokenTransfer } from './types.ts'

/** Event topics (REFERENCE.md): keccak256 of the event signatures. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
export const TRANSFER_SINGLE_TOPIC = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62'
export const TRANSFER_BATCH_TOPIC = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb'

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000' as Address

/** A 32-byte topic holding an address: the low 20 bytes, lowercase. */
function topicAddress(topic: Hex): Address | null {
  if (topic.length !== 66) return null
  return `0x${topic.slice(26).toLowerCase()}` as Address
}

/** The `i`-th 32-byte word of ABI data (without 0x), or null when the data is too short. */
function word(data: string, i: number): bigint | null {
  const start = 2 + i * 64
  if (data.length < start + 64) return null
  return BigInt(`0x${data.slice(start, start + 64)}`)
}

/**
 * Decodes the token transfers of one log. Hand-written instead of a generic ABI decoder
 * because it runs for every log of every block (throughput matters) and because malformed
 * logs from non-standard contracts must be skipped, not thrown: a token contract can emit
 * anything under the Transfer topic. Shapes that fit no standard (e.g. the pre-ERC-721
 * CryptoKitties layout with every field in data) yield nothing.
 */
export function decodeTransfers(log: IndexedLog): TokenTransfer[] {
  const t0 = log.topics[0]
  if (t0 === TRANSFER_TOPIC) {
    const from = log.topics[1] && topicAddress(log.topics[1])
    const to = log.topics[2] && topicAddress(log.topics[2])
    if (!from || !to) return []
    if (log.topics.length === 3) {
      const value = word(log.data, 0)
      if (value === null || log.data.length !== 66) return []
      return [base(log, 'ERC20', from, to, value, null, 0)]
    }
    if (log.topics.length === 4 && log.data === '0x') {
      const id = BigInt(log.topics[3] as Hex)
      return [base(log, 'ERC721', from, to, 1n, id, 0)]
    }
    return []
  }
  if (t0 === TRANSFER_SINGLE_TOPIC) {
    if (log.topics.length !== 4) return []
    const from = topicAddress(log.topics[2] as Hex)
    const to = topicAddress(log.topics[3] as Hex)
    const id = word(log.data, 0)
    const value = word(log.data, 1)
    if (!from || !to || id === null || value === null) return []
    return [base(log, 'ERC1155', from, to, value, id, 0)]
  }
  if (t0 === TRANSFER_BATCH_TOPIC) {
    if (log.topics.length !== 4) return []
    const from = topicAddress(log.topics[2] as Hex)
    const to = topicAddress(log.topics[3] as Hex)
    if (!from || !to) return []
    const ids = readArray(log.data, word(log.data, 0))
    const values = readArray(log.data, word(log.data, 1))
    if (!ids || !values || ids.length !== values.length) return []
    return ids.map((id, i) => base(log, 'ERC1155', from, to, values[i] as bigint, id, i))
  }
  return []
}

/** A dynamic uint256[] at byte `offset` of the data; null when it does not fit. */
function readArray(data: string, offset: bigint | null): bigint[] | null {
  if (offset === null || offset % 32n !== 0n) return null
  const at = Number(offset / 32n)
  const len = word(data, at)
  // Bound the length by the data actually present, so a hostile length cannot allocate.
  if (len === null || len > BigInt((data.length - 2) / 64)) return null
  const out: bigint[] = []
  for (let i = 0; i < Number(len); i++) {
    const v = word(data, at + 1 + i)
    if (v === null) return null
    out.push(v)
  }
  return out
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
