import { concat, encodeAbiParameters, hexToBigInt, keccak256, type LocalAccount, slice } from 'viem'
import type { UserOperationV06, UserOperationV07 } from '../bundler/types.ts'
import { initCodeOf, packV07 } from '../bundler/userop.ts'
import type { Address, Hex } from '../types.ts'

/**
 * What the VerifyingPaymaster of `@account-abstraction/contracts` checks, computed locally
 * (eth-infinitism/account-abstraction, `VerifyingPaymaster.sol`): the hash its `getHash` returns for v0.7 and v0.6, and the
 * paymaster data laid out as its `parsePaymasterAndData` reads it. The signer signs the hash as
 * an EIP-191 message, as the contract recovers it.
 */

/**
 * A well-formed 65-byte signature (low s, v 27/28, a real signature by a throwaway key): the
 * paymaster's ECDSA recovery reverts on malformed ones, which would make gas estimation fail
 * instead of measuring. It recovers to an address that is not the signer, so an op carrying it
 * never passes validation.
 */
export const STUB_SIGNATURE: Hex =
  '0x8a377c54f0ed2218fb237c7cee97c0176256cad2e440308d63d00e3a638ea5847bf135a3152254e5d0c35eb4874f0041410c10d659a0fe03ceba33e23dc99bd71b'

/** `abi.encode(uint48 validUntil, uint48 validAfter)`: 64 bytes after the paymaster address. */
export function encodeValidity(validUntil: number, validAfter: number): Hex {
  return encodeAbiParameters([{ type: 'uint48' }, { type: 'uint48' }], [validUntil, validAfter])
}

/** v0.7 `getHash(userOp, validUntil, validAfter)`; the op's paymaster gas limits are signed too. */
export function v07PaymasterHash(
  op: UserOperationV07,
  chainId: number,
  paymaster: Address,
  validUntil: number,
  validAfter: number,
): Hex {
  const packed = packV07(op)
  return keccak256(
    encodeAbiParameters(
      [
        { type: 'address' },
        { type: 'uint256' },
        { type: 'bytes32' },
        { type: 'bytes32' },
        { type: 'bytes32' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'bytes32' },
        { type: 'uint256' },
        { type: 'address' },
        { type: 'uint48' },
        { type: 'uint48' },
      ],
      [
        op.sender,
        op.nonce,
        keccak256(initCodeOf(op)),
        keccak256(op.callData),
        packed.accountGasLimits,
        (op.paymasterVerificationGasLimit << 128n) | op.paymasterPostOpGasLimit,
        op.preVerificationGas,
        packed.gasFees,
        BigInt(chainId),
        paymaster,
        validUntil,
        validAfter,
      ],
    ),
  )
}

const v06Tuple = {
  type: 'tuple',
  components: [
    { name: 'sender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'initCode', type: 'bytes' },
    { name: 'callData', type: 'bytes' },
    { name: 'callGasLimit', type: 'uint256' },
    { name: 'verificationGasLimit', type: 'uint256' },
    { name: 'preVerificationGas', type: 'uint256' },
    { name: 'maxFeePerGas', type: 'uint256' },
    { name: 'maxPriorityFeePerGas', type: 'uint256' },
    { name: 'paymasterAndData', type: 'bytes' },
    { name: 'signature', type: 'bytes' },
  ],
} as const

/**
 * v0.6 `getHash`: keccak256(abi.encode(pack(userOp), chainid, paymaster, senderNonce[sender],
 * validUntil, validAfter)), where pack(userOp) is the op's calldata encoding up to (not
 * including) paymasterAndData. That head holds the signature's offset, which depends on the
 * length of paymasterAndData: it is encoded at its final length (address ‖ validity ‖ 65 bytes).
 */
export function v06PaymasterHash(
  op: UserOperationV06,
  chainId: number,
  paymaster: Address,
  senderNonce: bigint,
  validUntil: number,
  validAfter: number,
): Hex {
  const finalShape = concat([paymaster, encodeValidity(validUntil, validAfter), STUB_SIGNATURE])
  const encoded = encodeAbiParameters([v06Tuple], [{ ...op, paymasterAndData: finalShape }])
  const tuple = slice(encoded, 32) // past the tuple's own offset word
  const paymasterAndDataOffset = Number(hexToBigInt(slice(tuple, 9 * 32, 10 * 32)))
  const packed = slice(tuple, 0, paymasterAndDataOffset)
  return keccak256(
    encodeAbiParameters(
      [
        { type: 'bytes' },
        { type: 'uint256' },
        { type: 'address' },
        { type: 'uint256' },
        { type: 'uint48' },
        { type: 'uint48' },
      ],
      [packed, BigInt(chainId), paymaster, senderNonce, validUntil, validAfter],
    ),
  )
}

/** The signer's EIP-191 signature over a paymaster hash. */
export function signPaymasterHash(signer: LocalAccount, hash: Hex): Promise<Hex> {
  return signer.signMessage({ message: { raw: hash } })
}

/** v0.7 `paymasterData` (after address and gas limits): validity ‖ signature. */
export const v07PaymasterData = (validUntil: number, validAfter: number, signature: Hex): Hex =>
  concat([encodeValidity(validUntil, validAfter), signature])

/** v0.6 `paymasterAndData`: paymaster ‖ validity ‖ signature. */
export const v06PaymasterAndData = (
  paymaster: Address,
  validUntil: number,
  validAfter: number,
  signature: Hex,
): Hex => concat([paymaster, encodeValidity(validUntil, validAfter), signature])
