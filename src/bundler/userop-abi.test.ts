import { encodeAbiParameters, encodeFunctionData, encodeFunctionResult, hexToBytes, parseAbi } from 'viem'
import { getUserOperationHash } from 'viem/account-abstraction'
import { describe, expect, it } from 'vitest'
import type { Address, Hex } from '../types.ts'
import type { UserOperationV07 } from './types.ts'
import { calcPreVerificationGas, packV07 } from './userop.ts'
import {
  decodeValidationResultV07,
  packedV07Digits,
  simulateValidationV07Data,
  userOpHashV07,
} from './userop-abi.ts'

/** The hand-written v0.7 encodings (userop-abi.ts) give viem's bytes for every op shape. */

const abi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function simulateValidation(PackedUserOperation userOp) returns (uint256)',
])

const bytes = (n: number, seed: number): Hex =>
  `0x${Array.from({ length: n }, (_, i) => ((i * 31 + seed) % 7 === 0 ? '00' : ((i + seed) % 256).toString(16).padStart(2, '0'))).join('')}`

const U128 = (1n << 128n) - 1n
const base: UserOperationV07 = {
  version: 'v07',
  sender: '0x1234567890abcdef1234567890abcdef12345678',
  nonce: (5n << 64n) | 7n,
  factory: null,
  factoryData: '0x',
  callData: bytes(100, 1),
  callGasLimit: 80_000n,
  verificationGasLimit: 120_000n,
  preVerificationGas: 50_000n,
  maxFeePerGas: 3_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
  paymaster: null,
  paymasterVerificationGasLimit: 0n,
  paymasterPostOpGasLimit: 0n,
  paymasterData: '0x',
  signature: bytes(65, 2),
}

const shapes: [string, UserOperationV07][] = [
  ['plain', base],
  ['empty callData and signature', { ...base, callData: '0x', signature: '0x' }],
  [
    'factory and paymaster, odd lengths, largest values',
    {
      ...base,
      nonce: (1n << 256n) - 1n,
      factory: '0x9406cc6185a346906296840746125a0e44976454',
      factoryData: bytes(37, 3),
      callData: bytes(64, 4),
      callGasLimit: U128,
      verificationGasLimit: U128,
      preVerificationGas: (1n << 256n) - 1n,
      maxFeePerGas: U128,
      maxPriorityFeePerGas: 0n,
      paymaster: '0x00000000000000000000000000000000000000aa',
      paymasterVerificationGasLimit: 100_000n,
      paymasterPostOpGasLimit: U128,
      paymasterData: bytes(97, 5),
      signature: bytes(1, 6),
    },
  ],
]

const ep: Address = '0x0000000071727de22e5e9d8baf0edac6f37da032'

describe('v0.7 encodings by hand', () => {
  it.each(shapes)('%s: tuple, simulateValidation calldata, userOpHash and PVG match viem', (_, op) => {
    const p = packV07(op)
    const viemTuple = encodeAbiParameters(
      [
        { type: 'address' },
        { type: 'uint256' },
        { type: 'bytes' },
        { type: 'bytes' },
        { type: 'bytes32' },
        { type: 'uint256' },
        { type: 'bytes32' },
        { type: 'bytes' },
        { type: 'bytes' },
      ],
      [
        p.sender,
        p.nonce,
        p.initCode,
        p.callData,
        p.accountGasLimits,
        p.preVerificationGas,
        p.gasFees,
        p.paymasterAndData,
        p.signature,
      ],
    )
    expect(`0x${packedV07Digits(op)}`).toBe(viemTuple)
    expect(simulateValidationV07Data(op)).toBe(
      encodeFunctionData({ abi, functionName: 'simulateValidation', args: [p] }),
    )
    const viemHash = getUserOperationHash({
      chainId: 31337,
      entryPointAddress: ep,
      entryPointVersion: '0.7',
      userOperation: {
        sender: op.sender,
        nonce: op.nonce,
        callData: op.callData,
        callGasLimit: op.callGasLimit,
        verificationGasLimit: op.verificationGasLimit,
        preVerificationGas: op.preVerificationGas,
        maxFeePerGas: op.maxFeePerGas,
        maxPriorityFeePerGas: op.maxPriorityFeePerGas,
        signature: op.signature,
        ...(op.factory ? { factory: op.factory, factoryData: op.factoryData } : {}),
        ...(op.paymaster
          ? {
              paymaster: op.paymaster,
              paymasterVerificationGasLimit: op.paymasterVerificationGasLimit,
              paymasterPostOpGasLimit: op.paymasterPostOpGasLimit,
              paymasterData: op.paymasterData,
            }
          : {}),
      },
    }).toLowerCase()
    expect(userOpHashV07(op, ep, 31337)).toBe(viemHash)
    const encoded = hexToBytes(viemTuple)
    let calldata = 0n
    for (const b of encoded) calldata += b === 0 ? 4n : 16n
    const words = BigInt(Math.ceil(encoded.length / 32))
    expect(calcPreVerificationGas(op)).toBe(21_000n + 18_300n + 4n * words + calldata)
  })

  it.each<[string, Hex]>([
    ['no paymaster context', '0x'],
    ['an odd-length paymaster context', bytes(45, 9)],
  ])('decodes simulateValidation results as viem does (%s)', (_, paymasterContext) => {
    const resultAbi = parseAbi([
      'struct ReturnInfo { uint256 preOpGas; uint256 prefund; uint256 accountValidationData; uint256 paymasterValidationData; bytes paymasterContext; }',
      'struct StakeInfo { uint256 stake; uint256 unstakeDelaySec; }',
      'struct AggregatorStakeInfo { address aggregator; StakeInfo stakeInfo; }',
      'struct ValidationResult { ReturnInfo returnInfo; StakeInfo senderInfo; StakeInfo factoryInfo; StakeInfo paymasterInfo; AggregatorStakeInfo aggregatorInfo; }',
      'function simulateValidation(bytes x) returns (ValidationResult)',
    ])
    const value = {
      returnInfo: {
        preOpGas: 123_456n,
        prefund: 10n ** 18n,
        accountValidationData: (1n << 208n) | (5n << 160n) | 1n,
        paymasterValidationData: (1n << 256n) - 1n,
        paymasterContext,
      },
      senderInfo: { stake: 1n, unstakeDelaySec: 2n },
      factoryInfo: { stake: 3n, unstakeDelaySec: 4n },
      paymasterInfo: { stake: 10n ** 18n, unstakeDelaySec: 86_400n },
      aggregatorInfo: {
        aggregator: '0x00000000000000000000000000000000000000bb' as Address,
        stakeInfo: { stake: 7n, unstakeDelaySec: 8n },
      },
    }
    const data = encodeFunctionResult({ abi: resultAbi, functionName: 'simulateValidation', result: value })
    const { aggregatorInfo: _aggregator, ...rest } = value
    expect(decodeValidationResultV07(data)).toEqual(rest)
    expect(decodeValidationResultV07(data.slice(0, -64) as Hex)).toBeNull()
    expect(decodeValidationResultV07('0x')).toBeNull()
  })

  it('refuses a value wider than its field, as viem does', () => {
    expect(() => packedV07Digits({ ...base, callGasLimit: U128 + 1n })).toThrow(/does not fit/)
    expect(() => packV07({ ...base, callGasLimit: U128 + 1n })).toThrow()
  })
})
