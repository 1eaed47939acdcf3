import {
  type Abi,
  decodeErrorResult,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  keccak256,
  pad,
  parseAbi,
  toHex,
} from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import { artifact } from '../aa/contracts.ts'
import type { Address, Hex } from '../types.ts'
import type { BundlerChain, CallOutcome, StateOverride } from './chain.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type BundlerErrorCodeValue,
  type EntryPointRef,
  type StakeInfo,
  type UserOperation,
  type UserOperationV06,
  type UserOperationV07,
} from './types.ts'
import { encodeHandleOps, nonceKey, nonceSequence, packV07, v06Struct } from './userop.ts'
import { decodeValidationResultV07, simulateValidationV07Data } from './userop-abi.ts'

/**
 * EntryPoint simulations. v0.6 has `simulateValidation`/`simulateHandleOp` on the EntryPoint
 * itself, and both always revert with their result. v0.7 moved them to `EntryPointSimulations`,
 * never deployed: its runtime code replaces the EntryPoint's through an `eth_call` state
 * override (storage — deposits, nonces — stays the real EntryPoint's) and returns normally.
 */

const simulationsV07Abi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'struct ReturnInfo { uint256 preOpGas; uint256 prefund; uint256 accountValidationData; uint256 paymasterValidationData; bytes paymasterContext; }',
  'struct StakeInfo { uint256 stake; uint256 unstakeDelaySec; }',
  'struct AggregatorStakeInfo { address aggregator; StakeInfo stakeInfo; }',
  'struct ValidationResult { ReturnInfo returnInfo; StakeInfo senderInfo; StakeInfo factoryInfo; StakeInfo paymasterInfo; AggregatorStakeInfo aggregatorInfo; }',
  'struct ExecutionResult { uint256 preOpGas; uint256 paid; uint256 accountValidationData; uint256 paymasterValidationData; bool targetSuccess; bytes targetResult; }',
  'function simulateValidation(PackedUserOperation userOp) returns (ValidationResult)',
  'function simulateHandleOp(PackedUserOperation op, address target, bytes targetCallData) returns (ExecutionResult)',
])

const errorAbi: Abi = [...entryPoint06Abi, ...entryPoint07Abi].filter((x) => x.type === 'error')

let simulationsCode: Hex | undefined
/** EntryPointSimulations runtime code from the pinned @account-abstraction/contracts 0.7.0. */
export function entryPointSimulationsCode(): Hex {
  simulationsCode ??= artifact('v07', 'EntryPointSimulations').deployedBytecode
  return simulationsCode
}

const UINT48_MAX = 2 ** 48 - 1
const ADDRESS_MASK = (1n << 160n) - 1n

/** validationData = validAfter(6) ‖ validUntil(6) ‖ aggregator(20); validUntil 0 = forever. */
export function parseValidationData(v: bigint): {
  aggregator: bigint
  validAfter: number
  validUntil: number
} {
  const validUntil = Number((v >> 160n) & ((1n << 48n) - 1n))
  return {
    aggregator: v & ADDRESS_MASK,
    validUntil: validUntil === 0 ? UINT48_MAX : validUntil,
    validAfter: Number(v >> 208n),
  }
}

export interface SimulatedValidation {
  preOpGas: bigint
  prefund: bigint
  /** Which signature failed, if any (v0.6 cannot tell the account's from the paymaster's). */
  sigFailed: 'account' | 'paymaster' | 'account or paymaster' | null
  /** Non-zero when an aggregator is asked for (not supported). */
  aggregator: bigint
  validAfter: number
  /** Unix seconds; UINT48_MAX when unbounded. */
  validUntil: number
  paymasterContext: Hex
  senderInfo: StakeInfo
  factoryInfo: StakeInfo
  paymasterInfo: StakeInfo
}

export interface SimulatedExecution {
  preOpGas: bigint
  paid: bigint
  targetSuccess: boolean
  targetResult: Hex
}

interface ReturnInfoV06 {
  preOpGas: bigint
  prefund: bigint
  sigFailed: boolean
  validAfter: number
  validUntil: number
  paymasterContext: Hex
}

const stake = (s: { stake: bigint; unstakeDelaySec: bigint }): StakeInfo => ({
  stake: s.stake,
  unstakeDelaySec: s.unstakeDelaySec,
})

/** EIP-1167 minimal proxy runtime: every call delegated to `target`, its return or revert passed on. */
export function delegatingCode(target: Address): Hex {
  return `0x363d3d373d3d3d363d73${target.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3`
}

/**
 * The override a v0.7 simulation runs with: the EntryPoint's code replaced by EntryPointSimulations,
 * or, where that code is deployed at `deployed` (simulations.ts), by a proxy delegating to it.
 */
export function simulationOverride(
  ep: EntryPointRef,
  extra: StateOverride = {},
  deployed: Address | null = null,
): StateOverride {
  if (ep.version === 'v06') return extra
  const key = Object.keys(extra).find((k) => k.toLowerCase() === ep.address)
  const mine = key ? extra[key] : undefined
  const rest = key ? Object.fromEntries(Object.entries(extra).filter(([k]) => k !== key)) : extra
  const code = deployed ? delegatingCode(deployed) : entryPointSimulationsCode()
  return { ...rest, [ep.address]: { ...mine, code } }
}

/**
 * The EntryPoint's `nonceSequenceNumber[sender][key]` (NonceManager, storage slot 1 in v0.6 and
 * v0.7) set to `nonce`'s sequence: validation of an op queued behind the sender's pending ones
 * then sees the nonce it will see once those are mined.
 */
export function nonceOverride(ep: EntryPointRef, sender: Address, nonce: bigint): StateOverride {
  const inner = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [sender, 1n]))
  const slot = keccak256(
    encodeAbiParameters([{ type: 'uint192' }, { type: 'bytes32' }], [nonceKey(nonce), inner]),
  )
  return { [ep.address]: { stateDiff: { [slot]: pad(toHex(nonceSequence(nonce)), { size: 32 }) } } }
}

/** simulateValidation as a call: its calldata and the state override it runs with. */
export interface ValidationCall {
  data: Hex
  override: StateOverride
}

/**
 * The call that simulates `op`'s validation on `ep`: v0.6's `simulateValidation` on the
 * EntryPoint, or v0.7's on EntryPointSimulations put in the EntryPoint's place; `override` (a
 * queued nonce) applies to either.
 */
export function validationCall(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  override: StateOverride = {},
): ValidationCall {
  if (op.version === 'v06')
    return {
      data: encodeFunctionData({
        abi: entryPoint06Abi,
        functionName: 'simulateValidation',
        args: [v06Struct(op)],
      }),
      override,
    }
  return {
    data: simulateValidationV07Data(op),
    override: simulationOverride(ep, override, chain.simulations),
  }
}

export async function simulateValidation(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  override: StateOverride = {},
): Promise<SimulatedValidation> {
  const call = validationCall(chain, ep, op, override)
  return validationOutcome(op, await chain.call({ to: ep.address, data: call.data }, call.override))
}

/**
 * What a validationCall's outcome says: the simulated validation, or the BundlerError its revert
 * decodes to (v0.6's simulateValidation always reverts, with its result as the revert).
 */
export function validationOutcome(op: UserOperation, out: CallOutcome): SimulatedValidation {
  if (op.version === 'v06') {
    if (out.ok)
      throw new BundlerError(BundlerErrorCode.internal, 'simulateValidation returned instead of reverting')
    const decoded = decodeRevert(out.revert)
    if (
      decoded?.errorName === 'ValidationResult' ||
      decoded?.errorName === 'ValidationResultWithAggregation'
    ) {
      const [ret, sender, factory, paymaster, agg] = decoded.args as unknown as [
        ReturnInfoV06,
        StakeInfo,
        StakeInfo,
        StakeInfo,
        { aggregator: Address } | undefined,
      ]
      return {
        preOpGas: ret.preOpGas,
        prefund: ret.prefund,
        sigFailed: ret.sigFailed ? 'account or paymaster' : null,
        aggregator: agg ? BigInt(agg.aggregator) : 0n,
        validAfter: Number(ret.validAfter),
        validUntil: Number(ret.validUntil) === 0 ? UINT48_MAX : Number(ret.validUntil),
        paymasterContext: ret.paymasterContext,
        senderInfo: stake(sender),
        factoryInfo: stake(factory),
        paymasterInfo: stake(paymaster),
      }
    }
    throw revertToError(out.revert, out.message)
  }
  if (!out.ok) throw revertToError(out.revert, out.message)
  const r =
    decodeValidationResultV07(out.data) ??
    decodeFunctionResult({ abi: simulationsV07Abi, functionName: 'simulateValidation', data: out.data })
  const account = parseValidationData(r.returnInfo.accountValidationData)
  const pm = parseValidationData(r.returnInfo.paymasterValidationData)
  return {
    preOpGas: r.returnInfo.preOpGas,
    prefund: r.returnInfo.prefund,
    sigFailed: account.aggregator === 1n ? 'account' : pm.aggregator === 1n ? 'paymaster' : null,
    aggregator: account.aggregator > 1n ? account.aggregator : 0n,
    validAfter: Math.max(account.validAfter, pm.validAfter),
    validUntil: Math.min(account.validUntil, pm.validUntil),
    paymasterContext: r.returnInfo.paymasterContext,
    senderInfo: stake(r.senderInfo),
    factoryInfo: stake(r.factoryInfo),
    paymasterInfo: stake(r.paymasterInfo),
  }
}

/**
 * Runs the whole op (validation, execution, postOp) in an `eth_call`, then `target.call(data)`
 * from the EntryPoint. `paid` is what the op paid; with maxFee = maxPriorityFee the EntryPoint
 * charges exactly that fee per gas (its "legacy mode"), so paid / fee is the gas it charged.
 */
export async function simulateHandleOp(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  target: Address,
  targetCallData: Hex,
  override: StateOverride = {},
): Promise<SimulatedExecution> {
  if (op.version === 'v06') {
    const data = encodeFunctionData({
      abi: entryPoint06Abi,
      functionName: 'simulateHandleOp',
      args: [v06Struct(op as UserOperationV06), target, targetCallData],
    })
    const out = await chain.call({ to: ep.address, data }, override)
    if (out.ok)
      throw new BundlerError(BundlerErrorCode.internal, 'simulateHandleOp returned instead of reverting')
    const decoded = decodeRevert(out.revert)
    if (decoded?.errorName === 'ExecutionResult') {
      const [preOpGas, paid, , , targetSuccess, targetResult] = decoded.args as unknown as [
        bigint,
        bigint,
        number,
        number,
        boolean,
        Hex,
      ]
      return { preOpGas, paid, targetSuccess, targetResult }
    }
    throw revertToError(out.revert, out.message)
  }
  const data = encodeFunctionData({
    abi: simulationsV07Abi,
    functionName: 'simulateHandleOp',
    args: [packV07(op as UserOperationV07), target, targetCallData],
  })
  const out = await chain.call({ to: ep.address, data }, simulationOverride(ep, override, chain.simulations))
  if (!out.ok) throw revertToError(out.revert, out.message)
  const r = decodeFunctionResult({ abi: simulationsV07Abi, functionName: 'simulateHandleOp', data: out.data })
  return { preOpGas: r.preOpGas, paid: r.paid, targetSuccess: r.targetSuccess, targetResult: r.targetResult }
}

/** Where an acceptance-time handleOps `eth_call` pays its fee: any address but zero (AA90). */
const BENEFICIARY: Address = '0x000000000000000000000000000000000000dEaD'

/**
 * A v0.6 op whose validation passes can still fail as a whole: the EntryPoint charges the gas it
 * used against a prefund of (callGasLimit + verificationGasLimit + preVerificationGas) × fee, and
 * one whose limits are short of its validation and execution fails with AA51 (prefund below
 * actualGasCost). The op alone in a handleOps `eth_call` (the builder's own check) runs
 * validation, execution and postOp as the bundle will, so such an op is refused at acceptance
 * (-32500, as the reference bundler refuses it), not accepted and dropped at bundle time.
 * simulateHandleOp is not enough: its memory is laid out apart from handleOps's, so the gas it
 * measures is a few units lower and an op short by those few passes it. Not for v0.7: its
 * EntryPoint includes such an op as failed (UserOperationPrefundTooLow) and keeps the prefund.
 */
export async function runAloneInHandleOps(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  override: StateOverride,
): Promise<void> {
  const data = encodeHandleOps([op], BENEFICIARY)
  const out = await chain.call({ to: ep.address, data }, override)
  if (!out.ok) throw revertToError(out.revert, out.message)
}

function decodeRevert(data: Hex) {
  if (data.length < 10) return null
  try {
    return decodeErrorResult({ abi: errorAbi, data })
  } catch {
    return null
  }
}

/** Readable text of a nested revert (Error(string), Panic, or raw hex). */
export function revertReason(data: Hex): string {
  if (data === '0x' || data.length < 10) return data === '0x' ? 'no revert data' : data
  try {
    const d = decodeErrorResult({ abi: errorAbi, data })
    if (d.errorName === 'Error') return String(d.args?.[0])
    if (d.errorName === 'Panic') return `panic ${String(d.args?.[0])}`
    return `${d.errorName}(${(d.args ?? []).map(String).join(', ')})`
  } catch {
    return data
  }
}

/** ERC-7769 code for an EntryPoint `AAxx` reason (ERC-4337 error table). */
export function codeForReason(reason: string): BundlerErrorCodeValue {
  const aa = /^AA(\d\d)/.exec(reason)?.[1]
  if (!aa) return BundlerErrorCode.simulateValidation
  if (aa === '22' || aa === '32') return BundlerErrorCode.expiresShortly
  if (aa === '24' || aa === '34') return BundlerErrorCode.invalidSignature
  if (aa === '31') return BundlerErrorCode.paymasterDepositTooLow
  if (aa.startsWith('3')) return BundlerErrorCode.simulatePaymasterValidation
  return BundlerErrorCode.simulateValidation
}

/** What to change, for the reasons a client can act on. */
const ADVICE: Record<string, string> = {
  AA10: 'the sender is already deployed: remove initCode (factory/factoryData)',
  AA13: 'the factory call failed or ran out of gas: check factoryData or raise verificationGasLimit',
  AA14: 'initCode returned another address than sender: sender must be the factory’s address for these args',
  AA15: 'initCode did not deploy code at sender',
  AA20: 'the sender has no code: add initCode (factory/factoryData) to deploy it',
  AA21: 'the sender cannot pay the prefund: fund the account or its EntryPoint deposit, or use a paymaster',
  AA23: 'validateUserOp reverted or ran out of gas: check the signature format or raise verificationGasLimit',
  AA25: 'the nonce is not the next one for this key: read EntryPoint.getNonce(sender, key)',
  AA26: 'validation used more than verificationGasLimit: raise verificationGasLimit',
  AA31: 'the paymaster’s EntryPoint deposit does not cover the op: top up the paymaster deposit',
  AA33: 'validatePaymasterUserOp reverted or ran out of gas: check paymasterData or raise the paymaster gas limit',
  AA36: 'paymaster validation used more than paymasterVerificationGasLimit: raise it',
  AA40: 'validation used more than verificationGasLimit: raise verificationGasLimit',
  AA41: 'verificationGasLimit is too low for the paymaster: raise verificationGasLimit',
  AA51: 'the gas limits do not prepay the gas the op uses: raise verificationGasLimit or callGasLimit (eth_estimateUserOperationGas gives enough)',
}

/** The op a `FailedOp`/`FailedOpWithRevert` revert of handleOps names, or null. */
export function failedOpIndex(revert: Hex): number | null {
  const d = decodeRevert(revert)
  if (d?.errorName !== 'FailedOp' && d?.errorName !== 'FailedOpWithRevert') return null
  return Number(d.args?.[0])
}

/** A simulation revert as the BundlerError the client gets. */
export function revertToError(revert: Hex, nodeMessage: string): BundlerError {
  const d = decodeRevert(revert)
  if (d?.errorName === 'FailedOp' || d?.errorName === 'FailedOpWithRevert') {
    const reason = String(d.args?.[1] ?? '')
    const inner = d.errorName === 'FailedOpWithRevert' ? revertReason(d.args?.[2] as Hex) : null
    const advice = ADVICE[reason.slice(0, 4)]
    const message = [reason, inner ? `(${inner})` : null, advice ? `— ${advice}` : null]
      .filter(Boolean)
      .join(' ')
    return new BundlerError(codeForReason(reason), message, { reason, ...(inner ? { inner } : {}) })
  }
  if (d?.errorName === 'SignatureValidationFailed')
    return new BundlerError(BundlerErrorCode.unsupportedAggregator, 'aggregated signature check failed')
  const text = revert === '0x' ? nodeMessage : revertReason(revert)
  return new BundlerError(BundlerErrorCode.simulateValidation, `EntryPoint simulation reverted: ${text}`)
}
