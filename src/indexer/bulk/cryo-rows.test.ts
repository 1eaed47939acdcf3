import { describe, expect, it } from 'vitest'
import { hexToBytes } from '../../storage/bytea.ts'
import type { Hash } from '../../types.ts'
import { TRANSFER_TOPIC } from '../decode.ts'
import { cryoLog, cryoTrace, cryoTransaction } from './cryo-rows.ts'

/** cryo rows checked by hand: bad values are refused with the dataset, row and column named. */
const bytes = (n: number, fill = 0xab) => new Uint8Array(n).fill(fill)
const at = { dataset: 'transactions', row: 7 }

describe('cryo rows', () => {
  const tx = {
    block_number: 5,
    transaction_index: 2,
    transaction_hash: bytes(32),
    nonce: 3n,
    from_address: bytes(20, 1),
    to_address: null,
    value_string: '1000',
    input: new Uint8Array([0xa9, 0x05, 0x9c, 0xbb, 1, 2, 3]),
    success: true,
  }

  it('reads a transaction: the value, a creation address, and the calldata selector only', () => {
    const { block, tx: t } = cryoTransaction(tx, at)
    expect(block).toBe(5n)
    expect(t.value).toBe(1000n)
    expect(t.input).toBe('0xa9059cbb')
    expect(t.created).toMatch(/^0x[0-9a-f]{40}$/)
    expect(t.success).toBe(true)
    expect(
      cryoTransaction({ ...tx, value_string: null, value_binary: new Uint8Array([1, 0]) }, at).tx.value,
    ).toBe(256n)
    expect(cryoTransaction({ ...tx, transaction_hash: `0x${'CD'.repeat(32)}` }, at).tx.hash).toBe(
      `0x${'cd'.repeat(32)}`,
    )
  })

  it('refuses wrong sizes, kinds and missing values, naming where', () => {
    expect(() => cryoTransaction({ ...tx, from_address: bytes(19) }, at)).toThrow(
      'transactions row 7: from_address: expected 20 bytes',
    )
    expect(() => cryoTransaction({ ...tx, transaction_index: -1 }, at)).toThrow(/transaction_index/)
    expect(() => cryoTransaction({ ...tx, value_string: 'ten' }, at)).toThrow(/value_string/)
    expect(() => cryoTransaction({ ...tx, value_string: undefined }, at)).toThrow(/no value column/)
    expect(() => cryoTransaction({ ...tx, success: 'yes' }, at)).toThrow(/success: expected a boolean/)
    const log = {
      block_number: 1,
      log_index: 0,
      transaction_hash: bytes(32),
      address: bytes(20),
      topic0: bytes(32),
      topic1: bytes(31),
      data: new Uint8Array(),
    }
    const of = { number: 1n, hash: `0x${'11'.repeat(32)}` as Hash, timestamp: 1 }
    const logAt = { dataset: 'logs', row: 3 }
    const transfer = { ...log, topic0: hexToBytes(TRANSFER_TOPIC) }
    expect(() => cryoLog(transfer, logAt, of)).toThrow('logs row 3: topic1: expected 32 bytes')
    expect(cryoLog({ ...transfer, topic1: null }, logAt, of)?.topics).toEqual([TRANSFER_TOPIC])
    // A log no decoder reads is not converted, but its columns are still checked.
    expect(cryoLog({ ...log, topic1: null }, logAt, of)).toBeUndefined()
    expect(() => cryoLog(log, logAt, of)).toThrow('logs row 3: topic1: expected 32 bytes')
    expect(() => cryoLog({ ...log, topic1: null, address: bytes(19) }, logAt, of)).toThrow(
      'logs row 3: address: expected 20 bytes',
    )
    expect(() =>
      cryoTrace(
        { block_number: 1, action_type: 'call', trace_address: '0-1' },
        { dataset: 'traces', row: 0 },
      ),
    ).toThrow(/trace_address/)
  })
})
