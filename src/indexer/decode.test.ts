import { randomBytes } from 'node:crypto'
import { encodeAbiParameters, pad, toHex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { Address, Hash, Hex } from '../types.ts'
import {
  type DecodedLog,
  decodeLog,
  MAX_BATCH_ITEMS,
  TRANSFER_BATCH_TOPIC,
  TRANSFER_SINGLE_TOPIC,
  TRANSFER_TOPIC,
} from './decode.ts'
import type { IndexedLog } from './types.ts'

const TOKEN = '0x00000000000000000000000000000000000000cc' as Address
const A = pad('0x0a11ce') as Hex
const B = pad('0x0b0b') as Hex
const OP = pad('0x0909') as Hex
const TX = `0x${'ab'.repeat(32)}` as Hash

const log = (topics: Hex[], data: Hex = '0x'): IndexedLog => ({
  address: TOKEN,
  topics,
  data,
  txHash: TX,
  logIndex: 3,
})
const words = (...ws: bigint[]) => `0x${ws.map((w) => w.toString(16).padStart(64, '0')).join('')}` as Hex
const batch = (ids: bigint[], values: bigint[]) =>
  log(
    [TRANSFER_BATCH_TOPIC, OP, A, B],
    encodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], [ids, values]),
  )
const skipped = (d: DecodedLog) => (d.ok ? null : `${d.event}: ${d.reason}`)

describe('decodeLog: standard transfers', () => {
  it('decodes ERC-20, ERC-721, ERC-1155 single and batch transfers', () => {
    expect(decodeLog(log([TRANSFER_TOPIC, A, B], words(500n)))).toMatchObject({
      ok: true,
      transfers: [{ standard: 'ERC20', from: '0x00000000000000000000000000000000000a11ce', value: 500n }],
    })
    expect(decodeLog(log([TRANSFER_TOPIC, A, B, pad('0x07')]))).toMatchObject({
      ok: true,
      transfers: [{ standard: 'ERC721', tokenId: 7n, value: 1n }],
    })
    expect(decodeLog(log([TRANSFER_SINGLE_TOPIC, OP, A, B], words(1n, 5n)))).toMatchObject({
      ok: true,
      transfers: [{ standard: 'ERC1155', tokenId: 1n, value: 5n }],
    })
    const b = decodeLog(batch([1n, 2n, 3n], [10n, 20n, 30n]))
    expect(b.ok && b.transfers.map((t) => [t.tokenId, t.value, t.batchIndex])).toEqual([
      [1n, 10n, 0],
      [2n, 20n, 1],
      [3n, 30n, 2],
    ])
    // Other topics are not ours: nothing, and not a skip.
    expect(decodeLog(log([pad('0x1234') as Hex], '0x01'))).toEqual({ ok: true, transfers: [] })
    expect(decodeLog(log([]))).toEqual({ ok: true, transfers: [] })
  })
})

describe('decodeLog: malformed logs are skipped with a reason, never thrown', () => {
  it('Transfer: short or long data, a missing 4th topic, dirty address topics, other topic counts', () => {
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, A, B], '0x01')))).toMatch(/Transfer: .*1 bytes/)
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, A, B], `${words(1n)}00` as Hex)))).toMatch(/33 bytes/)
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, A, B], '0x123')))).toMatch(/partial byte/)
    // An ERC-721 Transfer that lost its token id topic.
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, A, B])))).toMatch(/ERC-20 Transfer with 0 bytes/)
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, A, B, pad('0x07')], words(1n))))).toMatch(/ERC-721/)
    expect(skipped(decodeLog(log([TRANSFER_TOPIC], words(1n, 2n, 3n))))).toMatch(/1 topics/)
    expect(skipped(decodeLog(log([TRANSFER_TOPIC, `0x${'ff'.repeat(32)}`, B], words(1n))))).toMatch(
      /not an address/,
    )
  })

  it('TransferSingle: short data, extra data, wrong topic count', () => {
    expect(skipped(decodeLog(log([TRANSFER_SINGLE_TOPIC, OP, A, B], words(1n))))).toMatch(/32 bytes/)
    expect(skipped(decodeLog(log([TRANSFER_SINGLE_TOPIC, OP, A, B], words(1n, 2n, 3n))))).toMatch(/96 bytes/)
    expect(skipped(decodeLog(log([TRANSFER_SINGLE_TOPIC, A, B], words(1n, 2n))))).toMatch(/3 topics/)
  })

  it('TransferBatch: 33 bytes, offsets past the data, lengths that differ, lengths that lie', () => {
    // The log that used to throw RangeError in BigInt((data.length - 2) / 64).
    const b33 = log([TRANSFER_BATCH_TOPIC, OP, A, B], `0x${'00'.repeat(32)}01`)
    expect(skipped(decodeLog(b33))).toMatch(/TransferBatch: 33 bytes.*not whole 32-byte words/)
    expect(skipped(decodeLog(log([TRANSFER_BATCH_TOPIC, OP, A, B], words(0x1000n, 0x1000n))))).toMatch(
      /do not decode/,
    )
    expect(skipped(decodeLog(log([TRANSFER_BATCH_TOPIC, OP, A, B], words(2n ** 255n, 64n, 0n))))).toMatch(
      /do not decode/,
    )
    expect(skipped(decodeLog(batch([1n, 2n], [1n, 2n, 3n])))).toMatch(/2 ids but 3 values/)
    // Lengths that claim more words than follow: 2^64 (refused by count), then 5 (by viem's bounds).
    const liar = log([TRANSFER_BATCH_TOPIC, OP, A, B], words(64n, 64n, 2n ** 64n, 1n, 2n, 3n))
    expect(skipped(decodeLog(liar))).toMatch(/18446744073709551616 items claimed/)
    const shortLiar = log([TRANSFER_BATCH_TOPIC, OP, A, B], words(64n, 64n, 5n, 1n, 2n, 3n))
    expect(skipped(decodeLog(shortLiar))).toMatch(/do not decode/)
  })

  it('TransferBatch: refuses more than MAX_BATCH_ITEMS items, with or without reading them', () => {
    // 100,000 items sharing one array: 3.2 MB of data, refused by its size alone.
    const big = `${words(64n, 64n, 100_000n)}${'00'.repeat(32 * 100_000)}` as Hex
    expect(skipped(decodeLog(log([TRANSFER_BATCH_TOPIC, OP, A, B], big)))).toMatch(/more than 10000 items/)
    // Just over the cap, small enough in bytes to decode: refused by its count.
    const over = `${words(64n, 64n, BigInt(MAX_BATCH_ITEMS + 1))}${'00'.repeat(32 * (MAX_BATCH_ITEMS + 1))}`
    expect(skipped(decodeLog(log([TRANSFER_BATCH_TOPIC, OP, A, B], over as Hex)))).toMatch(
      /10001 items claimed, more than 10000/,
    )
    const ids = Array.from({ length: MAX_BATCH_ITEMS }, (_, i) => BigInt(i))
    const atCap = decodeLog(batch(ids, ids))
    expect(atCap.ok && atCap.transfers.length).toBe(MAX_BATCH_ITEMS)
  })

  it('never throws on random data under any transfer topic', () => {
    const topics = [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_BATCH_TOPIC]
    for (let i = 0; i < 3000; i++) {
      const t0 = topics[i % 3] as Hex
      const extra = Array.from({ length: i % 5 }, () => toHex(randomBytes(32)))
      // Mostly small words (plausible offsets and lengths), sometimes raw random bytes.
      const data =
        i % 4 === 0
          ? toHex(randomBytes(i % 200))
          : words(...Array.from({ length: i % 9 }, () => BigInt(randomBytes(1)[0] as number)))
      expect(() => decodeLog(log([t0, ...extra], data))).not.toThrow()
    }
  })
})
