import { concat } from 'viem'
import { parseUserOperation } from '../bundler/schema.ts'
import { BundlerError, type EntryPointVersion, type UserOperation } from '../bundler/types.ts'
import { invalidRequest } from '../errors.ts'
import type { Hex } from '../types.ts'

/**
 * The UserOperation a sponsorship request carries, parsed with the bundler's schema (one
 * definition of the wire shape). The `POST /gas/sponsor` body leaves out `initCode`,
 * `paymasterAndData` and `signature`; the paymaster hash covers the init code, so it may be sent
 * as `initCode` or `factory`/`factoryData`, on either version.
 */

/**
 * Gas for the VerifyingPaymaster's validation: it needs 15,000–20,000 on the devnet (below that
 * the EntryPoint fails AA36). Unused verification gas is not charged, so the headroom costs only
 * a larger reservation.
 */
export const PAYMASTER_VERIFICATION_GAS = 60_000n
/** The VerifyingPaymaster returns no context, so the EntryPoint never calls its postOp. */
export const PAYMASTER_POST_OP_GAS = 0n

export function parseSponsoredOp(
  raw: unknown,
  version: EntryPointVersion,
  opts: { field: string; estimating?: boolean },
): UserOperation {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalidRequest(`${opts.field} must be a JSON object`)
  // null and absent mean the same; drop them so the defaults below apply.
  const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null && v !== undefined))
  const filled: Record<string, unknown> = { signature: '0x', ...given }
  if (version === 'v06') {
    if (given.factory !== undefined) {
      if (given.initCode !== undefined && given.initCode !== '0x')
        throw invalidRequest(
          `${opts.field} has both initCode and factory/factoryData: send one form, not both`,
        )
      if (
        typeof given.factory !== 'string' ||
        (given.factoryData !== undefined && typeof given.factoryData !== 'string')
      )
        throw invalidRequest(`${opts.field}.factory and factoryData must be hex strings`)
      filled.initCode = concat([given.factory as Hex, (given.factoryData as Hex | undefined) ?? '0x'])
    }
    filled.initCode ??= '0x'
    filled.paymasterAndData = '0x'
  }
  try {
    return parseUserOperation(filled, version, { estimating: opts.estimating ?? false })
  } catch (err) {
    if (err instanceof BundlerError) throw invalidRequest(err.message.replace(/^userOperation/, opts.field))
    throw err
  }
}

/** The paymaster gas limits the signature covers: the op's own when it carries them, else ours. */
export function paymasterGas(op: UserOperation): { verification: bigint; postOp: bigint } {
  if (op.version === 'v07' && op.paymaster)
    return { verification: op.paymasterVerificationGasLimit, postOp: op.paymasterPostOpGasLimit }
  return { verification: PAYMASTER_VERIFICATION_GAS, postOp: PAYMASTER_POST_OP_GAS }
}

/**
 * The most the op can cost the paymaster: the EntryPoint's required prefund. v0.7: every gas
 * limit × maxFeePerGas. v0.6 with a paymaster: verificationGasLimit counts three times (it also
 * bounds the paymaster's validation and postOp).
 */
export function maxCost(op: UserOperation, pm: { verification: bigint; postOp: bigint }): bigint {
  if (op.version === 'v06')
    return (op.callGasLimit + op.verificationGasLimit * 3n + op.preVerificationGas) * op.maxFeePerGas
  return (
    (op.callGasLimit + op.verificationGasLimit + pm.verification + pm.postOp + op.preVerificationGas) *
    op.maxFeePerGas
  )
}
