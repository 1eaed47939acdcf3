import { size, toHex } from 'viem'
import type { Address, Hex } from '../types.ts'
import type { BundlerChain, StateOverride } from './chain.ts'
import { revertReason, type SimulatedExecution, simulateHandleOp } from './entrypoint.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type EntryPointRef,
  type RpcGasEstimate,
  type UserOperation,
} from './types.ts'
import { calcPreVerificationGas } from './userop.ts'

/**
 * eth_estimateUserOperationGas by simulation (`simulateHandleOp`, v0.7 through the
 * EntryPointSimulations override), for undeployed senders (initCode runs in the simulation) and
 * unfunded ones (the sender gets a balance override).
 *
 * 1. Run the op with generous limits and preVerificationGas 0: `preOpGas` is then exactly the
 *    validation gas, and with maxFee = maxPriorityFee = F the EntryPoint charges F per gas, so
 *    paid / F - preOpGas is the execution gas (v0.7 adds a 10 % penalty on unused execution
 *    gas, which is inverted). v0.7 with a paymaster: the account's share is measured by the same
 *    run without the paymaster; the paymaster's is the rest.
 * 2. In parallel, run it with callGasLimit 0 and the callData as the simulation's `target` call
 *    from the EntryPoint: a revert there is the call's own revert (-32521, with its reason).
 * 3. Add margins, then run the op with exactly those limits (and its own fees): it must
 *    validate, and its execution must use the same gas as with generous limits (an out-of-gas
 *    call uses all it was given). Raise the limit that fell short and retry, a few times.
 */

const SIM_VERIFICATION_GAS = 5_000_000n
const SIM_CALL_GAS = 10_000_000n
const SIM_POST_OP_GAS = 1_000_000n
const RICH = toHex(10n ** 30n)
/** IAccountExecute.executeUserOp: v0.7 calls it instead of the raw callData (no target probe). */
const EXECUTE_USER_OP = '0x8dd7712f'

const withMargin = (used: bigint, percent: bigint, plus: bigint) => (used * (100n + percent)) / 100n + plus

export async function estimateUserOperationGas(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  userOverride: StateOverride = {},
): Promise<RpcGasEstimate> {
  const head = await chain.block('latest')
  const hasPaymaster = op.version === 'v07' ? op.paymaster !== null : op.paymasterAndData.length >= 42
  // With a paymaster, generous limits × real fees could exceed its deposit: simulate at 1 wei.
  const fee = hasPaymaster ? 1n : op.maxFeePerGas > 0n ? op.maxFeePerGas : head.baseFeePerGas * 2n + 1n
  const override = withSenderBalance(userOverride, op.sender)
  const generous = withLimits(op, {
    verification: SIM_VERIFICATION_GAS,
    paymasterVerification: SIM_VERIFICATION_GAS,
    call: SIM_CALL_GAS,
    postOp:
      op.version === 'v07' && op.paymasterPostOpGasLimit > 0n ? op.paymasterPostOpGasLimit : SIM_POST_OP_GAS,
    fee,
  })
  const [full, probe, accountOnly] = await Promise.all([
    simulateHandleOp(chain, ep, generous, '0x0000000000000000000000000000000000000000', '0x', override),
    op.callData === '0x' || op.callData.startsWith(EXECUTE_USER_OP)
      ? null
      : simulateHandleOp(chain, ep, { ...generous, callGasLimit: 0n }, op.sender, op.callData, override),
    op.version === 'v07' && op.paymaster
      ? simulateHandleOp(
          chain,
          ep,
          withoutPaymaster(generous),
          '0x0000000000000000000000000000000000000000',
          '0x',
          override,
        )
      : null,
  ])
  if (probe && !probe.targetSuccess)
    throw new BundlerError(
      BundlerErrorCode.executionReverted,
      `the op's callData reverts: ${revertReason(probe.targetResult)}`,
      { revertData: probe.targetResult },
    )
  const validation = full.preOpGas
  const execution = executionGas(generous, full)
  const accountValidation = accountOnly ? accountOnly.preOpGas : validation
  let verificationGasLimit = withMargin(accountValidation, 30n, 10_000n)
  let paymasterVerificationGasLimit =
    accountOnly && validation > accountOnly.preOpGas
      ? withMargin(validation - accountOnly.preOpGas, 30n, 10_000n)
      : 0n
  if (op.version === 'v07' && op.paymaster && paymasterVerificationGasLimit === 0n)
    paymasterVerificationGasLimit = withMargin(validation, 30n, 10_000n)
  let callGasLimit = op.callData === '0x' ? 0n : withMargin(execution, 10n, 10_000n)
  const postOp = op.version === 'v07' ? op.paymasterPostOpGasLimit : 0n

  // Step 3: the op as it will be sent must validate and execute within these limits.
  const realFee = op.maxFeePerGas > 0n && !hasPaymaster ? op.maxFeePerGas : fee
  for (let attempt = 0; ; attempt++) {
    const candidate = withLimits(op, {
      verification: verificationGasLimit,
      paymasterVerification: paymasterVerificationGasLimit,
      call: callGasLimit,
      postOp,
      fee: realFee,
    })
    const shortfall = await checkLimits(chain, ep, candidate, override, execution)
    if (shortfall === null) break
    if (attempt >= 4)
      throw new BundlerError(
        BundlerErrorCode.simulateValidation,
        `could not find gas limits the op runs within (last: ${shortfall}); set the limits by hand`,
      )
    if (shortfall === 'verification') verificationGasLimit = withMargin(verificationGasLimit, 50n, 0n)
    else if (shortfall === 'paymaster')
      paymasterVerificationGasLimit = withMargin(paymasterVerificationGasLimit, 50n, 0n)
    else callGasLimit = withMargin(callGasLimit, 50n, 0n)
  }

  const final = withLimits(op, {
    verification: verificationGasLimit,
    paymasterVerification: paymasterVerificationGasLimit,
    call: callGasLimit,
    postOp,
    fee: op.maxFeePerGas,
  })
  const out: RpcGasEstimate = {
    preVerificationGas: toHex(calcPreVerificationGas(worstCaseBytes(final))),
    verificationGasLimit: toHex(verificationGasLimit),
    callGasLimit: toHex(callGasLimit),
  }
  if (op.version === 'v07' && op.paymaster) {
    out.paymasterVerificationGasLimit = toHex(paymasterVerificationGasLimit)
    out.paymasterPostOpGasLimit = toHex(postOp)
  }
  return out
}

function withLimits(
  op: UserOperation,
  l: { verification: bigint; paymasterVerification: bigint; call: bigint; postOp: bigint; fee: bigint },
): UserOperation {
  const common = {
    verificationGasLimit: l.verification,
    callGasLimit: l.call,
    preVerificationGas: 0n,
    maxFeePerGas: l.fee,
    maxPriorityFeePerGas: l.fee,
  }
  if (op.version === 'v06') return { ...op, ...common }
  return {
    ...op,
    ...common,
    ...(op.paymaster
      ? { paymasterVerificationGasLimit: l.paymasterVerification, paymasterPostOpGasLimit: l.postOp }
      : {}),
  }
}

function withoutPaymaster(op: UserOperation): UserOperation {
  if (op.version === 'v06') return { ...op, paymasterAndData: '0x' }
  return {
    ...op,
    paymaster: null,
    paymasterVerificationGasLimit: 0n,
    paymasterPostOpGasLimit: 0n,
    paymasterData: '0x',
  }
}

function withSenderBalance(o: StateOverride, sender: Address): StateOverride {
  const key = Object.keys(o).find((k) => k.toLowerCase() === sender) ?? sender
  const mine = o[key]
  if (mine?.balance) return o
  return { ...o, [key]: { ...mine, balance: RICH } }
}

/** Execution gas from `paid` (fee per gas = maxFeePerGas, since both fees are equal). */
function executionGas(op: UserOperation, r: SimulatedExecution): bigint {
  const charged = r.paid / op.maxFeePerGas - r.preOpGas
  if (op.version === 'v06') return charged > 0n ? charged : 0n
  // charged = used + floor((limit - used) / 10) when limit > used: find used.
  const limit = op.callGasLimit + (op.paymaster ? op.paymasterPostOpGasLimit : 0n)
  let used = (10n * charged - limit) / 9n
  while (used + (limit > used ? (limit - used) / 10n : 0n) < charged) used++
  while (used > 0n && used - 1n + (limit > used - 1n ? (limit - used + 1n) / 10n : 0n) >= charged) used--
  return used > 0n ? used : charged
}

/** Null when the op runs within its limits; else which limit fell short. */
async function checkLimits(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  override: StateOverride,
  expectedExecution: bigint,
): Promise<'verification' | 'paymaster' | 'call' | null> {
  let r: SimulatedExecution
  try {
    r = await simulateHandleOp(chain, ep, op, '0x0000000000000000000000000000000000000000', '0x', override)
  } catch (err) {
    if (!(err instanceof BundlerError)) throw err
    const reason = (err.data as { reason?: string } | undefined)?.reason ?? ''
    if (/^AA(13|23|26|40|41)/.test(reason)) return 'verification'
    if (/^AA(33|36)/.test(reason)) return op.version === 'v07' ? 'paymaster' : 'verification'
    if (/^AA95/.test(reason)) return 'call'
    throw err
  }
  if (op.callData === '0x') return null
  const used = executionGas(op, r)
  // A call that succeeds costs the same whatever its limit (the inversion of v0.7's penalty may
  // be off by a gas or two); one that ran out of gas — even in a nested call, which leaves 1/64
  // unspent — shows a different figure.
  const same = used + 8n >= expectedExecution && used <= expectedExecution + 8n
  return same && used < op.callGasLimit ? null : 'call'
}

/**
 * preVerificationGas for the op as the client will send it: the estimate request carries stub
 * signatures and paymaster data, and the client fills in fees afterwards. Counting those bytes
 * as non-zero and fees as 8-byte values makes the estimate cover what the real op costs.
 */
function worstCaseBytes(op: UserOperation): UserOperation {
  const ff = (n: number): Hex => `0x${'ff'.repeat(n)}`
  const sig = ff(Math.max(size(op.signature), 65))
  const u64 = 0xffffffffffffffffn
  const fees = {
    // preVerificationGas itself is in the encoding: count it as a 4-byte value.
    preVerificationGas: op.preVerificationGas > 0xffffffffn ? op.preVerificationGas : 0xffffffffn,
    maxFeePerGas: op.maxFeePerGas > u64 ? op.maxFeePerGas : u64,
    maxPriorityFeePerGas: op.maxPriorityFeePerGas > u64 ? op.maxPriorityFeePerGas : u64,
  }
  if (op.version === 'v06') {
    const pm = op.paymasterAndData
    const paymasterAndData: Hex =
      pm.length > 42 ? `0x${pm.slice(2, 42)}${'ff'.repeat((pm.length - 42) / 2)}` : pm
    return { ...op, ...fees, signature: sig, paymasterAndData }
  }
  return { ...op, ...fees, signature: sig, paymasterData: op.paymaster ? ff(size(op.paymasterData)) : '0x' }
}
