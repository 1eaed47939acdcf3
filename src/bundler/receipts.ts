import { decodeEventLog, decodeFunctionData, encodeEventTopics, getAddress, toHex } from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import type { Address, Hash, Hex } from '../types.ts'
import type { BundlerChain, RawLog, RawReceipt } from './chain.ts'
import { parseUserOperation, toRpcUserOperation } from './schema.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type EntryPointRef,
  type RpcUserOperationByHash,
  type RpcUserOperationReceipt,
  type UserOperation,
} from './types.ts'
import { userOpHash } from './userop.ts'

/**
 * eth_getUserOperationReceipt / eth_getUserOperationByHash from the EntryPoint's own logs
 * (`UserOperationEvent`, `UserOperationRevertReason`; same signatures in v0.6 and v0.7).
 */

/** topic0 of `UserOperationEvent` (the same signature in v0.6 and v0.7). */
export const [USER_OP_EVENT] = encodeEventTopics({ abi: entryPoint07Abi, eventName: 'UserOperationEvent' })
const [REVERT_REASON] = encodeEventTopics({ abi: entryPoint07Abi, eventName: 'UserOperationRevertReason' })
const [BEFORE_EXECUTION] = encodeEventTopics({ abi: entryPoint07Abi, eventName: 'BeforeExecution' })

export interface UserOpEvent {
  userOpHash: Hash
  sender: Address
  paymaster: Address
  nonce: bigint
  success: boolean
  actualGasCost: bigint
  actualGasUsed: bigint
}

const lower = <T extends string>(v: string) => v.toLowerCase() as T

function decodeUserOpEvent(log: RawLog): UserOpEvent {
  const e = decodeEventLog({
    abi: entryPoint07Abi,
    eventName: 'UserOperationEvent',
    topics: log.topics as [Hex, ...Hex[]],
    data: log.data,
  })
  return {
    userOpHash: lower<Hash>(e.args.userOpHash),
    sender: lower<Address>(e.args.sender),
    paymaster: lower<Address>(e.args.paymaster),
    nonce: e.args.nonce,
    success: e.args.success,
    actualGasCost: e.args.actualGasCost,
    actualGasUsed: e.args.actualGasUsed,
  }
}

const fromEntryPoint = (log: RawLog, ep: Address) => log.address.toLowerCase() === ep

/** Every UserOperationEvent of `entryPoint` in a receipt, in log order. */
export function userOpEvents(receipt: RawReceipt, entryPoint: Address): UserOpEvent[] {
  return receipt.logs
    .filter((l) => fromEntryPoint(l, entryPoint) && l.topics[0]?.toLowerCase() === USER_OP_EVENT)
    .map(decodeUserOpEvent)
}

/**
 * The op's receipt from its bundle's transaction receipt, or null when the op is not in it.
 * Its `logs` are those emitted while it executed: after the previous op's UserOperationEvent
 * (or the EntryPoint's BeforeExecution) and before its own.
 */
export function userOpReceipt(
  receipt: RawReceipt,
  entryPoint: Address,
  hash: Hash,
): RpcUserOperationReceipt | null {
  let start = -1
  for (let i = 0; i < receipt.logs.length; i++) {
    const log = receipt.logs[i] as RawLog
    if (!fromEntryPoint(log, entryPoint)) continue
    const topic = log.topics[0]?.toLowerCase()
    if (topic === BEFORE_EXECUTION) start = i
    if (topic !== USER_OP_EVENT) continue
    if (log.topics[1]?.toLowerCase() !== hash) {
      start = i
      continue
    }
    const ev = decodeUserOpEvent(log)
    const logs = receipt.logs.slice(start + 1, i)
    const revert = logs.find(
      (l) =>
        fromEntryPoint(l, entryPoint) &&
        l.topics[0]?.toLowerCase() === REVERT_REASON &&
        l.topics[1]?.toLowerCase() === hash,
    )
    let reason: Hex = '0x'
    if (revert) {
      const d = decodeEventLog({
        abi: entryPoint07Abi,
        eventName: 'UserOperationRevertReason',
        topics: revert.topics as [Hex, ...Hex[]],
        data: revert.data,
      })
      reason = d.args.revertReason
    }
    return {
      userOpHash: hash,
      entryPoint,
      sender: ev.sender,
      nonce: toHex(ev.nonce),
      paymaster: ev.paymaster,
      actualGasCost: toHex(ev.actualGasCost),
      actualGasUsed: toHex(ev.actualGasUsed),
      success: ev.success,
      reason,
      logs,
      receipt,
    }
  }
  return null
}

/**
 * The UserOperationEvent log of `hash` in the last `lookback` blocks, if any. The whole range is
 * one eth_getLogs where the node allows it; a node that refuses the range (hosted providers cap it,
 * from 10 to 10,000 blocks) is asked newest blocks first in windows a quarter as wide each
 * time it refuses, and the width that worked is kept for the next lookups (ten minutes). At most
 * `MAX_LOG_REQUESTS` requests per EntryPoint: past them the older blocks count as not found.
 */
export async function findUserOpLog(
  chain: BundlerChain,
  entryPoints: readonly EntryPointRef[],
  hash: Hash,
  lookback: bigint,
): Promise<{ log: RawLog; entryPoint: EntryPointRef } | null> {
  const head = (await chain.block('latest')).number
  const oldest = head > lookback ? head - lookback : 0n
  for (const ep of entryPoints) {
    const log = await newestLog(chain, ep.address, [USER_OP_EVENT as Hex, hash], oldest, head)
    if (log) return { log, entryPoint: ep }
  }
  return null
}

/** eth_getLogs requests one EntryPoint's lookup may make. */
export const MAX_LOG_REQUESTS = 12
/** How long a width learned from a refusal is kept. */
const LOG_WINDOW_KEPT_MS = 10 * 60_000
/** Narrower than this, a refusal is the node's answer, not its range cap (the tightest seen: 10 blocks). */
const MIN_LOG_WINDOW = 10n

async function newestLog(
  chain: BundlerChain,
  address: Address,
  topics: Hex[],
  oldest: bigint,
  head: bigint,
): Promise<RawLog | null> {
  const learned = chain.logWindow && chain.logWindow.until > Date.now() ? chain.logWindow.blocks : null
  let window = learned ?? head - oldest + 1n
  let to = head
  for (let requests = 0; to >= oldest && requests < MAX_LOG_REQUESTS; requests++) {
    const from = to - window + 1n > oldest ? to - window + 1n : oldest
    const out = await chain.logs({ address, topics, fromBlock: from, toBlock: to })
    if ('refused' in out) {
      if (window <= MIN_LOG_WINDOW)
        throw new BundlerError(BundlerErrorCode.internal, `eth_getLogs failed: ${out.refused}`)
      window = window / 4n > MIN_LOG_WINDOW ? window / 4n : MIN_LOG_WINDOW
      chain.logWindow = { blocks: window, until: Date.now() + LOG_WINDOW_KEPT_MS }
      continue
    }
    const log = out.logs.find((l) => !l.removed)
    if (log) return log
    if (from === oldest) return null
    to = from - 1n
  }
  return null
}

export async function receiptFromTx(
  chain: BundlerChain,
  txHash: Hash,
  entryPoint: Address,
  hash: Hash,
): Promise<RpcUserOperationReceipt | null> {
  const receipt = await chain.receipt(txHash)
  return receipt ? userOpReceipt(receipt, entryPoint, hash) : null
}

/** Finds `hash` among the ops of a handleOps transaction's input. */
export function opFromHandleOps(
  input: Hex,
  ep: EntryPointRef,
  chainId: number,
  hash: Hash,
): UserOperation | null {
  let ops: UserOperation[]
  try {
    if (ep.version === 'v06') {
      const d = decodeFunctionData({ abi: entryPoint06Abi, data: input })
      if (d.functionName !== 'handleOps') return null
      ops = d.args[0].map((o) => parseUserOperation(hexFields(o), 'v06'))
    } else {
      const d = decodeFunctionData({ abi: entryPoint07Abi, data: input })
      if (d.functionName !== 'handleOps') return null
      ops = d.args[0].map((o) => parseUserOperation(unpackV07(o), 'v07'))
    }
  } catch {
    return null
  }
  return ops.find((o) => userOpHash(o, ep.address, chainId) === hash) ?? null
}

function hexFields(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'bigint' ? toHex(v) : v]))
}

/** A decoded PackedUserOperation in the RPC (packed initCode/paymasterAndData) form schema.ts reads. */
function unpackV07(o: {
  sender: Address
  nonce: bigint
  initCode: Hex
  callData: Hex
  accountGasLimits: Hex
  preVerificationGas: bigint
  gasFees: Hex
  paymasterAndData: Hex
  signature: Hex
}): Record<string, unknown> {
  const hi = (w: Hex) => toHex(BigInt(`0x${w.slice(2, 34)}`))
  const lo = (w: Hex) => toHex(BigInt(`0x${w.slice(34, 66)}`))
  return {
    sender: o.sender,
    nonce: toHex(o.nonce),
    initCode: o.initCode,
    callData: o.callData,
    verificationGasLimit: hi(o.accountGasLimits),
    callGasLimit: lo(o.accountGasLimits),
    preVerificationGas: toHex(o.preVerificationGas),
    maxPriorityFeePerGas: hi(o.gasFees),
    maxFeePerGas: lo(o.gasFees),
    paymasterAndData: o.paymasterAndData,
    signature: o.signature,
  }
}

export function byHashResult(
  op: UserOperation,
  entryPoint: Address,
  mined: { blockNumber: Hex; blockHash: Hash; transactionHash: Hash } | null,
): RpcUserOperationByHash {
  return {
    userOperation: toRpcUserOperation(op),
    // Checksummed, as the reference bundler answers (clients compare the string).
    entryPoint: getAddress(entryPoint) as Address,
    blockNumber: mined?.blockNumber ?? null,
    blockHash: mined?.blockHash ?? null,
    transactionHash: mined?.transactionHash ?? null,
  }
}
