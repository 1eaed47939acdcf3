import { z } from 'zod'
import type { Address, Hash, Hex } from '../types.ts'
import {
  type Block,
  blockSchema,
  code,
  hex,
  type Log,
  logSchema,
  pendingBlockSchema,
  quantity,
  type Receipt,
  type ReceiptStatus,
  receiptSchema,
  receiptStatusSchema,
  type Transaction,
  transactionSchema,
} from './read-schemas.ts'
import type { UpstreamCallOptions, UpstreamPool } from './upstream-pool.ts'
import { UpstreamUnavailableError, upstreamAnswered, upstreamMalformed } from './upstream-unavailable.ts'

export type { Block, Log, Receipt, ReceiptStatus, Transaction }

/**
 * Typed chain reads: one function per JSON-RPC method (Ethereum JSON-RPC specification,
 * ethereum/execution-apis), each sending through the network's pool and checking the answer
 * with zod into branded types and bigints. Every failure is one error, UpstreamUnavailableError:
 * `error_answer` when the node answered a JSON-RPC error (the node's error kept in `node`),
 * `invalid_response` when the answer had the wrong shape, and the pool's own problems (no
 * upstream, a timeout) when none answered; each names the network and the method.
 *
 * Not for the gateway's forwarding of a client's request (src/rpc/service.ts): that passes the
 * node's answer through unchanged, whatever its shape.
 */

/** What a read sends through: a network's pool, or a wrapper over it (the bundler's gate). */
export type ChainCaller = Pick<UpstreamPool, 'call'>

/** A network's nodes: `Network` (registry.ts) is one. */
export interface ChainNode {
  readonly pool: ChainCaller
  readonly chain: string
  readonly network: string
}

export interface ReadOptions extends UpstreamCallOptions {
  /** How errors name the call (e.g. `eth_call (EntryPoint.getNonce)`); default the method. */
  label?: string
}

export type BlockTag = 'latest' | 'pending' | 'safe' | 'finalized' | 'earliest'
export type BlockRef = bigint | BlockTag

export const toQuantity = (v: bigint): Hex => `0x${v.toString(16)}`
const toBlockRef = (b: BlockRef): string => (typeof b === 'bigint' ? toQuantity(b) : b)

/**
 * One read: the node's result checked against `schema`. For methods without a function below
 * (eth_feeHistory, a tracer); the result's own check may then live with its caller.
 */
export async function request<S extends z.ZodTypeAny>(
  node: ChainNode,
  method: string,
  params: readonly unknown[],
  schema: S,
  opts: ReadOptions = {},
): Promise<z.output<S>> {
  const label = opts.label ?? method
  let out: Awaited<ReturnType<UpstreamPool['call']>>
  try {
    out = await node.pool.call(method, params, opts.timeoutMs === undefined ? undefined : opts)
  } catch (err) {
    throw err instanceof UpstreamUnavailableError ? err.forMethod(label) : err
  }
  if (out.error) throw upstreamAnswered(node, label, out.error)
  const parsed = schema.safeParse(out.result)
  if (!parsed.success) throw upstreamMalformed(node, label, parsed.error)
  return parsed.data
}

/**
 * A read whose answer the caller hands on as the node sent it (a subscription payload, receipts
 * an Alchemy method returns) or checks itself (a tracer's frames): only failures are typed.
 */
export function readUnchecked(
  node: ChainNode,
  method: string,
  params: readonly unknown[],
  opts?: ReadOptions,
): Promise<unknown> {
  return request(node, method, params, z.unknown(), opts)
}

export function chainId(node: ChainNode, opts?: ReadOptions): Promise<bigint> {
  return request(node, 'eth_chainId', [], quantity, opts)
}

export function getBlockNumber(node: ChainNode, opts?: ReadOptions): Promise<bigint> {
  return request(node, 'eth_blockNumber', [], quantity, opts)
}

/** The block at `block`, or null when the node does not have it (yet). */
export function getBlock(
  node: ChainNode,
  block: BlockRef,
  full = false,
  opts?: ReadOptions,
): Promise<Block | null> {
  return request(node, 'eth_getBlockByNumber', [toBlockRef(block), full], blockSchema.nullable(), opts)
}

/** The pending block's transactions, unchecked one by one (the caller keeps those it understands). */
export async function getPendingTransactions(node: ChainNode, opts?: ReadOptions): Promise<unknown[]> {
  const b = await request(
    node,
    'eth_getBlockByNumber',
    ['pending', true],
    pendingBlockSchema.nullable(),
    opts,
  )
  return b?.transactions ?? []
}

/** Contract code at `address`; `0x` when there is none. */
export function getCode(
  node: ChainNode,
  at: Address,
  block: BlockRef = 'latest',
  opts?: ReadOptions,
): Promise<Hex> {
  return request(node, 'eth_getCode', [at, toBlockRef(block)], code, opts)
}

/** Whether contract code is what `getCode` found. */
export const hasCode = (c: Hex): boolean => c !== '0x'

export function getBalance(
  node: ChainNode,
  holder: Address,
  block: BlockRef = 'latest',
  opts?: ReadOptions,
): Promise<bigint> {
  return request(node, 'eth_getBalance', [holder, toBlockRef(block)], quantity, opts)
}

export interface CallRequest {
  to: Address
  data: Hex
  from?: Address
}

/** eth_call: the return data. A revert is the node's error answer (`error_answer`, `node.data`). */
export function call(
  node: ChainNode,
  tx: CallRequest,
  block: BlockRef = 'latest',
  opts?: ReadOptions,
): Promise<Hex> {
  return request(node, 'eth_call', [tx, toBlockRef(block)], hex, opts)
}

export interface LogFilter {
  address?: Address | readonly Address[]
  topics?: readonly (Hex | readonly Hex[] | null)[]
  fromBlock?: BlockRef
  toBlock?: BlockRef
  blockHash?: Hash
}

export function getLogs(node: ChainNode, filter: LogFilter, opts?: ReadOptions): Promise<Log[]> {
  const { fromBlock, toBlock, ...rest } = filter
  const wire = {
    ...rest,
    ...(fromBlock === undefined ? {} : { fromBlock: toBlockRef(fromBlock) }),
    ...(toBlock === undefined ? {} : { toBlock: toBlockRef(toBlock) }),
  }
  return request(node, 'eth_getLogs', [wire], z.array(logSchema), opts)
}

/** The transaction, or null when the node does not know it. */
export function getTransaction(
  node: ChainNode,
  txHash: Hash,
  opts?: ReadOptions,
): Promise<Transaction | null> {
  return request(node, 'eth_getTransactionByHash', [txHash], transactionSchema.nullable(), opts)
}

/** The receipt, or null while the transaction is not mined. */
export function getTransactionReceipt(
  node: ChainNode,
  txHash: Hash,
  opts?: ReadOptions,
): Promise<Receipt | null> {
  return request(node, 'eth_getTransactionReceipt', [txHash], receiptSchema.nullable(), opts)
}

/**
 * Every receipt of the block (eth_getBlockReceipts), status only; null when the node does not
 * have the block. Not every node offers the method: its refusal is the node's error answer.
 */
export function getBlockReceipts(
  node: ChainNode,
  block: BlockRef,
  opts?: ReadOptions,
): Promise<ReceiptStatus[] | null> {
  return request(
    node,
    'eth_getBlockReceipts',
    [toBlockRef(block)],
    z.array(receiptStatusSchema).nullable(),
    opts,
  )
}

export function getTransactionCount(
  node: ChainNode,
  of: Address,
  block: BlockRef = 'latest',
  opts?: ReadOptions,
): Promise<bigint> {
  return request(node, 'eth_getTransactionCount', [of, toBlockRef(block)], quantity, opts)
}

/** A read's failure that is the node's own JSON-RPC error answer (a revert, a refused range). */
export function nodeError(err: unknown): { code: number; message: string; data?: unknown } | undefined {
  return err instanceof UpstreamUnavailableError && err.problem === 'error_answer' ? err.node : undefined
}

/**
 * Whether the node refused the method itself (not offered, or not by this provider or plan),
 * as opposed to failing this one call: JSON-RPC -32601, or a message saying so.
 */
export function methodRefused(err: unknown): boolean {
  const e = nodeError(err)
  if (!e) return false
  if (e.code === -32601) return true
  return /method not (found|supported|available)|not supported|unsupported|does not exist|unknown method|not available/i.test(
    e.message,
  )
}

/** Whether a read failed because the node's answer was not in the method's shape. */
export function malformedAnswer(err: unknown): boolean {
  return (
    err instanceof UpstreamUnavailableError &&
    err.problem === 'invalid_response' &&
    err.cause instanceof z.ZodError
  )
}

/**
 * Whether a read failed because the node answered it (an error, or a shape the method does not
 * return), not because no node could be reached.
 */
export function nodeAnswered(err: unknown): boolean {
  return nodeError(err) !== undefined || malformedAnswer(err)
}

/** What a failed read says: the node's own message when it answered an error, else the failure's. */
export function failureMessage(err: unknown): string {
  return (nodeError(err) ?? (err as Error)).message
}
