import { concat, encodeAbiParameters, encodeFunctionData, pad, toHex } from 'viem'
import { entryPoint06Abi, entryPoint07Abi, getUserOperationHash } from 'viem/account-abstraction'
import { type Address, type Hash, type Hex, toLowerAddress, toLowerHash } from '../types.ts'
import type { UserOperation, UserOperationV06, UserOperationV07 } from './types.ts'
import { calldataGas, packedV07Digits, userOpHashV07 } from './userop-abi.ts'

/** Encodings of a UserOperation the EntryPoint understands: hash, packed struct, handleOps. */

export const nonceKey = (nonce: bigint) => nonce >> 64n
export const nonceSequence = (nonce: bigint) => nonce & ((1n << 64n) - 1n)

export function initCodeOf(op: UserOperation): Hex {
  if (op.version === 'v06') return op.initCode
  return op.factory ? concat([op.factory, op.factoryData]) : '0x'
}

export function factoryOf(op: UserOperation): Address | null {
  const init = initCodeOf(op)
  return init.length >= 42 ? toLowerAddress(init.slice(0, 42)) : null
}

export function paymasterAndDataOf(op: UserOperation): Hex {
  if (op.version === 'v06') return op.paymasterAndData
  if (!op.paymaster) return '0x'
  return concat([
    op.paymaster,
    pad(toHex(op.paymasterVerificationGasLimit), { size: 16 }),
    pad(toHex(op.paymasterPostOpGasLimit), { size: 16 }),
    op.paymasterData,
  ])
}

export function paymasterOf(op: UserOperation): Address | null {
  const p = paymasterAndDataOf(op)
  return p.length >= 42 ? toLowerAddress(p.slice(0, 42)) : null
}

/** The v0.6 struct as the EntryPoint ABI takes it. */
export function v06Struct(op: UserOperationV06) {
  return {
    sender: op.sender,
    nonce: op.nonce,
    initCode: op.initCode,
    callData: op.callData,
    callGasLimit: op.callGasLimit,
    verificationGasLimit: op.verificationGasLimit,
    preVerificationGas: op.preVerificationGas,
    maxFeePerGas: op.maxFeePerGas,
    maxPriorityFeePerGas: op.maxPriorityFeePerGas,
    paymasterAndData: op.paymasterAndData,
    signature: op.signature,
  }
}

/** v0.7 `PackedUserOperation`: two uint128 per bytes32 (high ‖ low). */
export function packV07(op: UserOperationV07) {
  return {
    sender: op.sender,
    nonce: op.nonce,
    initCode: initCodeOf(op),
    callData: op.callData,
    accountGasLimits: concat([
      pad(toHex(op.verificationGasLimit), { size: 16 }),
      pad(toHex(op.callGasLimit), { size: 16 }),
    ]),
    preVerificationGas: op.preVerificationGas,
    gasFees: concat([
      pad(toHex(op.maxPriorityFeePerGas), { size: 16 }),
      pad(toHex(op.maxFeePerGas), { size: 16 }),
    ]),
    paymasterAndData: paymasterAndDataOf(op),
    signature: op.signature,
  }
}

export function userOpHash(op: UserOperation, entryPoint: Address, chainId: number): Hash {
  if (op.version === 'v06')
    return toLowerHash(
      getUserOperationHash({
        chainId,
        entryPointAddress: entryPoint,
        entryPointVersion: '0.6',
        userOperation: v06Struct(op),
      }),
    )
  return userOpHashV07(op, entryPoint, chainId)
}

/** `handleOps(ops, beneficiary)` calldata; every op must be of the EntryPoint's version. */
export function encodeHandleOps(ops: readonly UserOperation[], beneficiary: Address): Hex {
  const first = ops[0]
  if (!first) throw new Error('handleOps needs at least one op')
  if (first.version === 'v06')
    return encodeFunctionData({
      abi: entryPoint06Abi,
      functionName: 'handleOps',
      args: [ops.map((o) => v06Struct(o as UserOperationV06)), beneficiary],
    })
  return encodeFunctionData({
    abi: entryPoint07Abi,
    functionName: 'handleOps',
    args: [ops.map((o) => packV07(o as UserOperationV07)), beneficiary],
  })
}

/**
 * The v0.6 op's ABI encoding as it sits in handleOps calldata (all fields, signature included,
 * no outer offset) — what the reference bundler's `packUserOp(op, false)` measures for gas
 * (v0.7: packedV07Digits).
 */
function encodedForGas(op: UserOperationV06): Hex {
  return encodeAbiParameters(
    [
      { type: 'address' },
      { type: 'uint256' },
      { type: 'bytes' },
      { type: 'bytes' },
      { type: 'uint256' },
      { type: 'uint256' },
      { type: 'uint256' },
      { type: 'uint256' },
      { type: 'uint256' },
      { type: 'bytes' },
      { type: 'bytes' },
    ],
    [
      op.sender,
      op.nonce,
      op.initCode,
      op.callData,
      op.callGasLimit,
      op.verificationGasLimit,
      op.preVerificationGas,
      op.maxFeePerGas,
      op.maxPriorityFeePerGas,
      op.paymasterAndData,
      op.signature,
    ],
  )
}

/**
 * Gas the EntryPoint cannot measure: the op's share of the bundle transaction. Formula and
 * constants from the eth-infinitism reference bundler (`calcPreVerificationGas`,
 * `DefaultGasOverheads` in @account-abstraction/sdk, also used by Alto):
 *   fixed 21000 / bundleSize (1: an op must pay for a bundle of its own)
 *   + perUserOp 18300 + perUserOpWord 4 × (32-byte words of the encoded op)
 *   + calldata: 4 per zero byte, 16 per non-zero byte of the encoded op (EIP-2028).
 * Under EIP-7623 (Prague) a calldata-heavy, execution-light transaction pays a floor of 10/40 per
 * zero/non-zero byte instead; a bundle's execution gas keeps it above that floor in practice.
 */
export function calcPreVerificationGas(op: UserOperation): bigint {
  const digits = op.version === 'v07' ? packedV07Digits(op) : encodedForGas(op).slice(2)
  const words = BigInt(Math.ceil(digits.length / 64))
  return 21_000n + 18_300n + 4n * words + calldataGas(digits)
}
