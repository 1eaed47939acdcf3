import { toHex } from 'viem'
import type { JsonRpcAnswerable } from '../http/jsonrpc-errors.ts'
import type { JsonRpcErrorObject } from '../jsonrpc.ts'
import type { Address, Hash, Hex } from '../types.ts'

/**
 * UserOperations as the bundler holds them: one normalised shape per EntryPoint version, chain
 * quantities as bigint. The wire shapes (hex strings, v0.7 packed or unpacked) live in schema.ts.
 */

export type EntryPointVersion = 'v06' | 'v07'

/** The gas limits and fees both versions carry, by the same names (ERC-4337). */
export interface UserOperationGas {
  callGasLimit: bigint
  verificationGasLimit: bigint
  preVerificationGas: bigint
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
}

export interface UserOperationV06 extends UserOperationGas {
  version: 'v06'
  sender: Address
  nonce: bigint
  initCode: Hex
  callData: Hex
  paymasterAndData: Hex
  signature: Hex
}

/** The v0.7 RPC (unpacked) shape; `factory`/`paymaster` null when absent. */
export interface UserOperationV07 extends UserOperationGas {
  version: 'v07'
  sender: Address
  nonce: bigint
  factory: Address | null
  factoryData: Hex
  callData: Hex
  paymaster: Address | null
  paymasterVerificationGasLimit: bigint
  paymasterPostOpGasLimit: bigint
  paymasterData: Hex
  signature: Hex
}

export type UserOperation = UserOperationV06 | UserOperationV07

/** ERC-7769 error codes, plus -32521 for a call that reverts during estimation. */
export const BundlerErrorCode = {
  invalidFields: -32602,
  simulateValidation: -32500,
  simulatePaymasterValidation: -32501,
  opcodeValidation: -32502,
  expiresShortly: -32503,
  entityThrottled: -32504,
  stakeTooLow: -32505,
  unsupportedAggregator: -32506,
  invalidSignature: -32507,
  paymasterDepositTooLow: -32508,
  executionReverted: -32521,
  /** Not ERC-7769: the node failed us (route maps it to JSON-RPC internal error). */
  internal: -32603,
} as const

export type BundlerErrorCodeValue = (typeof BundlerErrorCode)[keyof typeof BundlerErrorCode]

/** Quantities as the wire wants them (debug results, stake status and error data carry bigints). */
export const wire = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? toHex(x) : x))) as unknown

/**
 * A refusal with its ERC-7769 code and a message that says what to change. Thrown by the
 * bundler services; the JSON-RPC funnel (http/jsonrpc-errors.ts) answers `{code, message, data}`.
 */
export class BundlerError extends Error implements JsonRpcAnswerable {
  constructor(
    readonly code: BundlerErrorCodeValue,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
    this.name = 'BundlerError'
  }

  jsonRpcError(): JsonRpcErrorObject {
    // The node failed us: the method is named, nothing else is passed on.
    if (this.code === BundlerErrorCode.internal) return { code: this.code, message: this.message }
    return {
      code: this.code,
      message: this.message,
      ...(this.data === undefined ? {} : { data: wire(this.data) }),
    }
  }
}

export const invalidFields = (message: string) => new BundlerError(BundlerErrorCode.invalidFields, message)

/** Mempool states; `reason` says why an op left the pool without being included. */
export type UserOpState = 'pending' | 'submitted' | 'included' | 'failed' | 'dropped'

export interface StakeInfo {
  stake: bigint
  unstakeDelaySec: bigint
}

/** What validation learnt about an op, kept with it in the mempool. */
export interface ValidationOutcome {
  /** Gas the EntryPoint charged for validation, including preVerificationGas. */
  preOpGas: bigint
  /** The most the op can cost (EntryPoint's requiredPrefund). */
  prefund: bigint
  validAfter: number
  /** Unix seconds; null when the op never expires. */
  validUntil: number | null
  senderInfo: StakeInfo
  factoryInfo: StakeInfo
  paymasterInfo: StakeInfo
  paymasterContext: Hex
}

export interface EntryPointRef {
  address: Address
  version: EntryPointVersion
}

/** The JSON-RPC results, exactly as the route sends them (ERC-7769 shapes, hex quantities). */
export interface RpcUserOperationReceipt {
  userOpHash: Hash
  entryPoint: Address
  sender: Address
  nonce: Hex
  paymaster: Address
  actualGasCost: Hex
  actualGasUsed: Hex
  success: boolean
  reason: Hex
  logs: RpcLog[]
  receipt: Record<string, unknown>
}

export interface RpcLog {
  address: Address
  topics: Hex[]
  data: Hex
  blockNumber: Hex
  blockHash: Hash
  transactionHash: Hash
  transactionIndex: Hex
  logIndex: Hex
  removed?: boolean
}

export interface RpcUserOperationByHash {
  userOperation: Record<string, Hex>
  entryPoint: Address
  blockNumber: Hex | null
  blockHash: Hash | null
  transactionHash: Hash | null
  /** Not in ERC-7769: where the op stands in this bundler's mempool, and why it left it. */
  status?: UserOpState
  reason?: string
}

export interface RpcGasEstimate {
  preVerificationGas: Hex
  verificationGasLimit: Hex
  callGasLimit: Hex
  paymasterVerificationGasLimit?: Hex
  paymasterPostOpGasLimit?: Hex
}
