import { z } from 'zod'
import { type Address, type Hex, isAddress, toLowerAddress, toLowerHash } from '../types.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type EntryPointVersion,
  invalidFields,
  type UserOperation,
  type UserOperationV06,
  type UserOperationV07,
} from './types.ts'

/**
 * Wire → domain for UserOperations (ERC-7769 params). Quantities are 0x hex (uint256, or uint128
 * where v0.7 packs two into 32 bytes); byte strings are 0x hex with whole bytes; addresses are
 * lowercased. v0.7 takes the unpacked RPC shape or the packed `initCode`/`paymasterAndData` form
 * (the PackedUserOperation fields of ERC-4337 v0.7), never both at once. Every refusal is -32602 naming the field.
 */

const UINT128_MAX = (1n << 128n) - 1n

const quantity = (bits: 128 | 256) =>
  z
    .string({ error: 'must be a 0x-prefixed hex quantity' })
    .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed hex quantity')
    .transform((v) => BigInt(v))
    .refine((v) => bits === 256 || v <= UINT128_MAX, `must fit in ${bits} bits`)

const bytes = z
  .string({ error: 'must be 0x-prefixed hex bytes' })
  // One character class and a length check: the repeated pair group backtracks on every digit.
  .refine(
    (v) => v.length % 2 === 0 && /^0x[0-9a-fA-F]*$/.test(v),
    'must be 0x-prefixed hex bytes (an even number of hex digits)',
  )
  .transform((v): Hex => `0x${v.slice(2).toLowerCase()}`)

const address = z
  .string({ error: 'must be a 0x-prefixed 20-byte hex address' })
  .refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')
  .transform(toLowerAddress)

/** Absent, null and (for byte fields) "0x" all mean "none". */
const optional = <T extends z.ZodType>(s: T) => s.nullish()

const gasField = (bits: 128 | 256, estimating: boolean) =>
  estimating
    ? quantity(bits)
        .nullish()
        .transform((v) => v ?? 0n)
    : quantity(bits)

function v06Schema(estimating: boolean) {
  return z.object({
    sender: address,
    nonce: quantity(256),
    initCode: bytes,
    callData: bytes,
    callGasLimit: gasField(256, estimating),
    verificationGasLimit: gasField(256, estimating),
    preVerificationGas: gasField(256, estimating),
    maxFeePerGas: gasField(256, estimating),
    maxPriorityFeePerGas: gasField(256, estimating),
    paymasterAndData: bytes,
    signature: bytes,
  })
}

function v07Schema(estimating: boolean) {
  return z.object({
    sender: address,
    nonce: quantity(256),
    factory: optional(address),
    factoryData: optional(bytes),
    initCode: optional(bytes),
    callData: bytes,
    callGasLimit: gasField(128, estimating),
    verificationGasLimit: gasField(128, estimating),
    preVerificationGas: gasField(256, estimating),
    maxFeePerGas: gasField(128, estimating),
    maxPriorityFeePerGas: gasField(128, estimating),
    paymaster: optional(address),
    paymasterVerificationGasLimit: optional(quantity(128)),
    paymasterPostOpGasLimit: optional(quantity(128)),
    paymasterData: optional(bytes),
    paymasterAndData: optional(bytes),
    signature: bytes,
  })
}

// Built once: zod schema construction costs far more than a parse (it was most of a sponsorship's CPU).
const SCHEMAS = {
  v06: { sending: v06Schema(false), estimating: v06Schema(true) },
  v07: { sending: v07Schema(false), estimating: v07Schema(true) },
} as const

function fail(error: z.ZodError, what: string, raw: unknown): never {
  const issue = error.issues[0]
  const field = issue?.path.length ? `${what}.${issue.path.join('.')}` : what
  // zod does not echo the input back: look the field up to tell "missing" from "malformed".
  let value: unknown = raw
  for (const k of issue?.path ?? []) value = (value as Record<PropertyKey, unknown> | undefined)?.[k]
  const message =
    issue?.code === 'invalid_type' && value === undefined ? 'is required' : (issue?.message ?? 'is invalid')
  throw invalidFields(`${field} ${message}`)
}

/**
 * Parses a UserOperation for the EntryPoint `version`. With `estimating`, gas limits and fees
 * may be absent (estimation fills them in); the signature must still be a stub of the right form.
 */
export function parseUserOperation(
  raw: unknown,
  version: EntryPointVersion,
  opts: { estimating?: boolean } = {},
): UserOperation {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalidFields('userOperation must be an object')
  const mode = opts.estimating ? 'estimating' : 'sending'
  if (version === 'v06') {
    const r = SCHEMAS.v06[mode].safeParse(raw)
    if (!r.success) fail(r.error, 'userOperation', raw)
    return { version: 'v06', ...r.data } satisfies UserOperationV06
  }
  const r = SCHEMAS.v07[mode].safeParse(raw)
  if (!r.success) fail(r.error, 'userOperation', raw)
  const o = r.data
  const factory = unpackFactory(o)
  const paymaster = unpackPaymaster(o)
  return {
    version: 'v07',
    sender: o.sender,
    nonce: o.nonce,
    ...factory,
    callData: o.callData,
    callGasLimit: o.callGasLimit,
    verificationGasLimit: o.verificationGasLimit,
    preVerificationGas: o.preVerificationGas,
    maxFeePerGas: o.maxFeePerGas,
    maxPriorityFeePerGas: o.maxPriorityFeePerGas,
    ...paymaster,
    signature: o.signature,
  } satisfies UserOperationV07
}

type V07Input = z.infer<ReturnType<typeof v07Schema>>

function unpackFactory(o: V07Input): Pick<UserOperationV07, 'factory' | 'factoryData'> {
  const unpacked = o.factory != null || (o.factoryData != null && o.factoryData !== '0x')
  if (o.initCode != null && o.initCode !== '0x') {
    if (unpacked)
      throw invalidFields('userOperation has both initCode and factory/factoryData: send one form, not both')
    if (o.initCode.length < 42)
      throw invalidFields('userOperation.initCode must start with the 20-byte factory address')
    return { factory: toLowerAddress(o.initCode.slice(0, 42)), factoryData: `0x${o.initCode.slice(42)}` }
  }
  if (o.factory == null) {
    if (unpacked) throw invalidFields('userOperation.factoryData is set without userOperation.factory')
    return { factory: null, factoryData: '0x' }
  }
  return { factory: o.factory, factoryData: o.factoryData ?? '0x' }
}

function unpackPaymaster(
  o: V07Input,
): Pick<
  UserOperationV07,
  'paymaster' | 'paymasterVerificationGasLimit' | 'paymasterPostOpGasLimit' | 'paymasterData'
> {
  const fields = [o.paymaster, o.paymasterVerificationGasLimit, o.paymasterPostOpGasLimit]
  const unpacked = fields.some((f) => f != null) || (o.paymasterData != null && o.paymasterData !== '0x')
  if (o.paymasterAndData != null && o.paymasterAndData !== '0x') {
    if (unpacked)
      throw invalidFields(
        'userOperation has both paymasterAndData and paymaster/paymaster* fields: send one form, not both',
      )
    const p = o.paymasterAndData
    // paymaster(20) ‖ verificationGasLimit(16) ‖ postOpGasLimit(16) ‖ data
    if (p.length < 2 + 52 * 2)
      throw invalidFields(
        'userOperation.paymasterAndData must hold paymaster (20 bytes), paymasterVerificationGasLimit and paymasterPostOpGasLimit (16 bytes each), then paymasterData',
      )
    return {
      paymaster: toLowerAddress(p.slice(0, 42)),
      paymasterVerificationGasLimit: BigInt(`0x${p.slice(42, 74)}`),
      paymasterPostOpGasLimit: BigInt(`0x${p.slice(74, 106)}`),
      paymasterData: `0x${p.slice(106)}`,
    }
  }
  if (o.paymaster == null) {
    if (unpacked)
      throw invalidFields(
        'userOperation has paymaster fields without userOperation.paymaster: set all or none',
      )
    return {
      paymaster: null,
      paymasterVerificationGasLimit: 0n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: '0x',
    }
  }
  if (o.paymasterVerificationGasLimit == null)
    throw invalidFields(
      'userOperation.paymasterVerificationGasLimit is required with userOperation.paymaster',
    )
  if (o.paymasterPostOpGasLimit == null)
    throw invalidFields('userOperation.paymasterPostOpGasLimit is required with userOperation.paymaster')
  return {
    paymaster: o.paymaster,
    paymasterVerificationGasLimit: o.paymasterVerificationGasLimit,
    paymasterPostOpGasLimit: o.paymasterPostOpGasLimit,
    paymasterData: o.paymasterData ?? '0x',
  }
}

/** The EntryPoint param: an address the network serves, or -32602 listing the ones it does. */
export function parseEntryPoint(raw: unknown, supported: readonly Address[]): Address {
  if (!isAddress(raw)) throw invalidFields('entryPoint must be a 0x-prefixed 20-byte hex address')
  const a = toLowerAddress(raw)
  if (!supported.includes(a))
    throw new BundlerError(
      BundlerErrorCode.invalidFields,
      `entryPoint ${a} is not supported here; supported: ${supported.join(', ') || 'none'}`,
    )
  return a
}

/** A userOpHash param (32 bytes). */
export function parseUserOpHash(raw: unknown): Hex {
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(raw))
    throw invalidFields('Missing/invalid userOpHash: it must be a 0x-prefixed 32-byte hex hash')
  return toLowerHash(raw)
}

const hexQuantity = (v: bigint): Hex => `0x${v.toString(16)}`

/** Domain → wire (ERC-7769 shape for the op's version), as eth_getUserOperationByHash returns it. */
export function toRpcUserOperation(op: UserOperation): Record<string, Hex> {
  const common = {
    sender: op.sender,
    nonce: hexQuantity(op.nonce),
    callData: op.callData,
    callGasLimit: hexQuantity(op.callGasLimit),
    verificationGasLimit: hexQuantity(op.verificationGasLimit),
    preVerificationGas: hexQuantity(op.preVerificationGas),
    maxFeePerGas: hexQuantity(op.maxFeePerGas),
    maxPriorityFeePerGas: hexQuantity(op.maxPriorityFeePerGas),
  }
  if (op.version === 'v06')
    return {
      ...common,
      initCode: op.initCode,
      paymasterAndData: op.paymasterAndData,
      signature: op.signature,
    }
  const out: Record<string, Hex> = { ...common, signature: op.signature }
  if (op.factory) {
    out.factory = op.factory
    out.factoryData = op.factoryData
  }
  if (op.paymaster) {
    out.paymaster = op.paymaster
    out.paymasterVerificationGasLimit = hexQuantity(op.paymasterVerificationGasLimit)
    out.paymasterPostOpGasLimit = hexQuantity(op.paymasterPostOpGasLimit)
    out.paymasterData = op.paymasterData
  }
  return out
}
