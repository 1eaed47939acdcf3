import { keccak256, toFunctionSelector } from 'viem'
import { type Address, type Hash, type Hex, toLowerHash } from '../types.ts'
import type { UserOperationV07 } from './types.ts'

/**
 * The v0.7 encodings every accept needs (the op's ABI tuple, the simulateValidation calldata,
 * the userOpHash), written out by hand: viem's generic ABI encoder was the bulk of an accept's
 * encoding cost, and these layouts are fixed. userop-abi.test.ts checks each against viem.
 */

const hex = (v: bigint, bytes: number, what: string): string => {
  const s = v.toString(16)
  if (v < 0n || s.length > bytes * 2) throw new Error(`${what} ${v} does not fit in ${bytes} bytes`)
  return s.padStart(bytes * 2, '0')
}
const word = (v: bigint, what = 'value') => hex(v, 32, what)
const addressWord = (a: Address) => a.slice(2).toLowerCase().padStart(64, '0')
/** Hex digits of `data` (no 0x), right-padded to whole words. */
const padded = (data: string) => {
  const rest = data.length % 64
  return rest === 0 ? data : data + '0'.repeat(64 - rest)
}

/** initCode and paymasterAndData as their v0.7 packed bytes (no 0x). */
function initCodeDigits(op: UserOperationV07): string {
  return op.factory ? op.factory.slice(2) + op.factoryData.slice(2) : ''
}
function paymasterDigits(op: UserOperationV07): string {
  if (!op.paymaster) return ''
  return (
    op.paymaster.slice(2) +
    hex(op.paymasterVerificationGasLimit, 16, 'paymasterVerificationGasLimit') +
    hex(op.paymasterPostOpGasLimit, 16, 'paymasterPostOpGasLimit') +
    op.paymasterData.slice(2)
  )
}

const accountGasLimits = (op: UserOperationV07) =>
  hex(op.verificationGasLimit, 16, 'verificationGasLimit') + hex(op.callGasLimit, 16, 'callGasLimit')
const gasFees = (op: UserOperationV07) =>
  hex(op.maxPriorityFeePerGas, 16, 'maxPriorityFeePerGas') + hex(op.maxFeePerGas, 16, 'maxFeePerGas')

/**
 * `PackedUserOperation` ABI-encoded as a tuple (no 0x, no outer offset): nine head words, then
 * initCode, callData, paymasterAndData and signature as length-prefixed, word-padded tails.
 */
export function packedV07Digits(op: UserOperationV07): string {
  const tails = [initCodeDigits(op), op.callData.slice(2), paymasterDigits(op), op.signature.slice(2)]
  const offsets: string[] = []
  let at = 9 * 32
  const body: string[] = []
  for (const t of tails) {
    offsets.push(word(BigInt(at)))
    const tail = word(BigInt(t.length / 2)) + padded(t)
    body.push(tail)
    at += tail.length / 2
  }
  return (
    addressWord(op.sender) +
    word(op.nonce, 'nonce') +
    offsets[0] +
    offsets[1] +
    accountGasLimits(op) +
    word(op.preVerificationGas, 'preVerificationGas') +
    gasFees(op) +
    offsets[2] +
    offsets[3] +
    body.join('')
  )
}

const SIMULATE_VALIDATION = toFunctionSelector(
  'simulateValidation((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes))',
)

/** EntryPointSimulations.simulateValidation(op) calldata. */
export function simulateValidationV07Data(op: UserOperationV07): Hex {
  return `${SIMULATE_VALIDATION}${word(32n)}${packedV07Digits(op)}`
}

const keccakDigits = (digits: string) => keccak256(`0x${digits}`).slice(2)

/**
 * The v0.7 userOpHash: keccak256(abi.encode(keccak256(abi.encode(sender, nonce,
 * keccak256(initCode), keccak256(callData), accountGasLimits, preVerificationGas, gasFees,
 * keccak256(paymasterAndData))), entryPoint, chainId)), as EntryPoint.getUserOpHash.
 */
export function userOpHashV07(op: UserOperationV07, entryPoint: Address, chainId: number): Hash {
  const inner =
    addressWord(op.sender) +
    word(op.nonce, 'nonce') +
    keccakDigits(initCodeDigits(op)) +
    keccakDigits(op.callData.slice(2)) +
    accountGasLimits(op) +
    word(op.preVerificationGas, 'preVerificationGas') +
    gasFees(op) +
    keccakDigits(paymasterDigits(op))
  return toLowerHash(keccak256(`0x${keccakDigits(inner)}${addressWord(entryPoint)}${word(BigInt(chainId))}`))
}

/**
 * Calldata gas of ABI-encoded bytes given as hex digits: 4 per zero byte, 16 per other byte
 * (EIP-2028), without building a byte array.
 */
export function calldataGas(digits: string): bigint {
  let zero = 0
  const n = digits.length >> 1
  for (let i = 0; i < digits.length; i += 2)
    if (digits.charCodeAt(i) === 48 && digits.charCodeAt(i + 1) === 48) zero++
  return BigInt(zero * 4 + (n - zero) * 16)
}

/** EntryPointSimulations v0.7 `simulateValidation`'s result, the fields the bundler reads. */
export interface ValidationResultV07 {
  returnInfo: {
    preOpGas: bigint
    prefund: bigint
    accountValidationData: bigint
    paymasterValidationData: bigint
    paymasterContext: Hex
  }
  senderInfo: { stake: bigint; unstakeDelaySec: bigint }
  factoryInfo: { stake: bigint; unstakeDelaySec: bigint }
  paymasterInfo: { stake: bigint; unstakeDelaySec: bigint }
}

/**
 * Decodes `abi.encode(ValidationResult)`: an offset to the tuple, whose head is the offset of
 * ReturnInfo (it ends in bytes) then sender, factory and paymaster StakeInfo and the aggregator's
 * (address, StakeInfo); ReturnInfo is four words and the offset of paymasterContext. Null when
 * the data does not have that shape (the caller lets viem decode and report it).
 */
export function decodeValidationResultV07(data: Hex): ValidationResultV07 | null {
  const d = data.slice(2)
  const at = (byte: number): bigint | null => {
    if (byte < 0 || (byte + 32) * 2 > d.length) return null
    return BigInt(`0x${d.slice(byte * 2, (byte + 32) * 2)}`)
  }
  const small = (v: bigint | null) => (v === null || v > BigInt(d.length) ? null : Number(v))
  const t = small(at(0))
  if (t === null) return null
  const r = small(at(t))
  if (r === null) return null
  const words: bigint[] = []
  for (let i = 1; i <= 6; i++) {
    const w = at(t + 32 * i)
    if (w === null) return null
    words.push(w)
  }
  const ri: bigint[] = []
  for (let i = 0; i < 4; i++) {
    const w = at(t + r + 32 * i)
    if (w === null) return null
    ri.push(w)
  }
  const ctx = small(at(t + r + 128))
  if (ctx === null) return null
  const len = small(at(t + r + ctx))
  const start = t + r + ctx + 32
  if (len === null || (start + len) * 2 > d.length) return null
  const [s0, s1, f0, f1, p0, p1] = words as [bigint, bigint, bigint, bigint, bigint, bigint]
  const [preOpGas, prefund, accountValidationData, paymasterValidationData] = ri as [
    bigint,
    bigint,
    bigint,
    bigint,
  ]
  return {
    returnInfo: {
      preOpGas,
      prefund,
      accountValidationData,
      paymasterValidationData,
      paymasterContext: `0x${d.slice(start * 2, (start + len) * 2)}`,
    },
    senderInfo: { stake: s0, unstakeDelaySec: s1 },
    factoryInfo: { stake: f0, unstakeDelaySec: f1 },
    paymasterInfo: { stake: p0, unstakeDelaySec: p1 },
  }
}
