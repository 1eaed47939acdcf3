import { concat, encodeAbiParameters, encodeFunctionData, pad, parseAbi, toHex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { Address } from '../types.ts'
import { decodeAccountCalls } from './policy-calls.ts'

const abi = parseAbi([
  'function execute(address dest, uint256 value, bytes func)',
  'function executeBatch(address[] dest, bytes[] func)',
  'function executeBatch(address[] dest, uint256[] value, bytes[] func)',
  'function executeBatch((address target, uint256 value, bytes data)[] calls)',
  'function execute(bytes32 mode, bytes executionCalldata)',
  'function executeUserOp(address to, uint256 value, bytes data, uint8 operation)',
  'function transfer(address to, uint256 amount)',
])
const A = '0x00000000000000000000000000000000000000aa' as Address
const B = '0x00000000000000000000000000000000000000bb' as Address
const transfer = encodeFunctionData({ abi, functionName: 'transfer', args: [B, 1n] })
const call = (to: Address, value: bigint, selector: string | null) => ({ to, value, selector })
const execTuple = [
  {
    type: 'tuple[]',
    components: [
      { name: 'target', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'data', type: 'bytes' },
    ],
  },
] as const

describe('account callData decoding', () => {
  it('SimpleAccount execute and both executeBatch signatures', () => {
    expect(
      decodeAccountCalls(encodeFunctionData({ abi, functionName: 'execute', args: [A, 5n, transfer] })),
    ).toEqual([call(A, 5n, '0xa9059cbb')])
    const v06 = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [
        [A, B],
        [transfer, '0x'],
      ],
    })
    expect(decodeAccountCalls(v06)).toEqual([call(A, 0n, '0xa9059cbb'), call(B, 0n, null)])
    const v07 = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [
        [A, B],
        [1n, 2n],
        ['0x', transfer],
      ],
    })
    expect(decodeAccountCalls(v07)).toEqual([call(A, 1n, null), call(B, 2n, '0xa9059cbb')])
    const mismatched = encodeFunctionData({ abi, functionName: 'executeBatch', args: [[A, B], [transfer]] })
    expect(decodeAccountCalls(mismatched)).toBeNull()
  })

  it('Coinbase Smart Wallet executeBatch of tuples', () => {
    const data = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [[{ target: A, value: 3n, data: transfer }]],
    })
    expect(decodeAccountCalls(data)).toEqual([call(A, 3n, '0xa9059cbb')])
  })

  it('ERC-7579 execute: single and batch call types; delegatecall is undecodable', () => {
    const single = encodeFunctionData({
      abi,
      functionName: 'execute',
      args: [pad('0x00', { dir: 'right' }), concat([A, pad(toHex(9n)), transfer])],
    })
    expect(decodeAccountCalls(single)).toEqual([call(A, 9n, '0xa9059cbb')])
    const batch = encodeFunctionData({
      abi,
      functionName: 'execute',
      args: [
        pad('0x01', { dir: 'right' }),
        encodeAbiParameters(execTuple, [
          [
            { target: A, value: 0n, data: '0x' },
            { target: B, value: 0n, data: transfer },
          ],
        ]),
      ],
    })
    expect(decodeAccountCalls(batch)).toEqual([call(A, 0n, null), call(B, 0n, '0xa9059cbb')])
    const delegate = encodeFunctionData({
      abi,
      functionName: 'execute',
      args: [pad('0xff', { dir: 'right' }), concat([A, transfer])],
    })
    expect(decodeAccountCalls(delegate)).toBeNull()
  })

  it('Safe 4337 module executeUserOp: calls only, never delegatecalls', () => {
    const ok = encodeFunctionData({ abi, functionName: 'executeUserOp', args: [A, 0n, transfer, 0] })
    expect(decodeAccountCalls(ok)).toEqual([call(A, 0n, '0xa9059cbb')])
    const delegate = encodeFunctionData({ abi, functionName: 'executeUserOp', args: [A, 0n, transfer, 1] })
    expect(decodeAccountCalls(delegate)).toBeNull()
  })

  it('empty callData makes no calls; anything else is undecodable', () => {
    expect(decodeAccountCalls('0x')).toEqual([])
    expect(decodeAccountCalls(transfer)).toBeNull()
    expect(decodeAccountCalls('0xb61d27f6')).toBeNull()
  })
})
