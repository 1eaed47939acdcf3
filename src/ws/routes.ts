import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { type Address, type Hash, toLowerAddress, toLowerHash } from '../types.ts'
import {
  MINED,
  type MinedFilter,
  PENDING_TXS,
  type PendingFilter,
  parseMinedFilter,
  parsePendingFilter,
} from './tx-filters.ts'

/**
 * Wire shapes of the WebSocket endpoint: the path, `eth_subscribe` parameters,
 * upstream heads and logs as Halyard accepts them, and reply frames (pushes: push-frame.ts).
 */

/** `/v1/ws/{chain}/{network}` with an optional trailing slash; anything else is 404. */
const WS_PATH = /^\/v1\/ws\/([^/?#]+)\/([^/?#]+)\/?$/

export function parseWsPath(pathname: string): { chain: string; network: string } | undefined {
  const m = WS_PATH.exec(pathname)
  if (!m) return undefined
  try {
    return { chain: decodeURIComponent(m[1]!), network: decodeURIComponent(m[2]!) }
  } catch {
    return undefined
  }
}

export const SUBSCRIPTION_KINDS = ['newHeads', 'logs', 'newPendingTransactions', 'syncing'] as const
/** Served on the Alchemy-compatible root only (tx-filters.ts). */
export const ALCHEMY_SUBSCRIPTION_KINDS = [MINED, PENDING_TXS] as const
export type SubscriptionKind =
  | (typeof SUBSCRIPTION_KINDS)[number]
  | (typeof ALCHEMY_SUBSCRIPTION_KINDS)[number]

const hexString = z.string().regex(/^0x[0-9a-fA-F]*$/, 'must be 0x-prefixed hex')
const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 32-byte 0x hex string')
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x address')
  .transform(toLowerAddress)

const topicSlot = z.union([
  z.null(),
  hash32.transform(toLowerHash),
  z.array(hash32.transform(toLowerHash)).max(32, 'has more than 32 alternatives'),
])

/** The `logs` filter: `address` and `topics` exactly as in eth_getLogs. */
const logFilterSchema = z
  .object({
    address: z.union([address, z.array(address).max(1000, 'has more than 1000 addresses')]).optional(),
    topics: z.array(topicSlot).max(4, 'has more than 4 positions').optional(),
  })
  // Clients (ethers, viem) send only address/topics; a block range means nothing for a live stream.
  .strip()

export interface LogFilter {
  /** Lowercase addresses; empty = any address. A set: tested for every log of every block. */
  addresses: ReadonlySet<Address>
  /** Per position: null = any topic, otherwise one of these (lowercase). */
  topics: readonly (readonly Hash[] | null)[]
}

export type SubscribeRequest =
  | { kind: 'newHeads' | 'newPendingTransactions' | 'syncing' }
  | { kind: 'logs'; filter: LogFilter }
  | { kind: typeof MINED; mined: MinedFilter }
  | { kind: typeof PENDING_TXS; pending: PendingFilter }

type SubscribeParse = { ok: true; value: SubscribeRequest } | { ok: false; message: string }

/**
 * Checks `eth_subscribe` params; the error message names the offending parameter. `alchemy`:
 * the Alchemy-compatible root, which serves Alchemy's transaction kinds too.
 */
export function parseSubscribeParams(params: readonly unknown[], alchemy = false): SubscribeParse {
  const kinds: readonly string[] = alchemy
    ? [...SUBSCRIPTION_KINDS, ...ALCHEMY_SUBSCRIPTION_KINDS]
    : SUBSCRIPTION_KINDS
  const kind = params[0]
  if (typeof kind !== 'string') {
    return { ok: false, message: `params[0]: subscription kind is required (one of ${kinds.join(', ')})` }
  }
  if (!kinds.includes(kind)) {
    return {
      ok: false,
      message: `params[0]: unknown subscription kind ${JSON.stringify(kind).slice(0, 80)} (supported: ${kinds.join(', ')})`,
    }
  }
  if (kind === MINED || kind === PENDING_TXS) return parseTxKind(kind, params)
  if (kind !== 'logs') {
    // geth accepts `newPendingTransactions` with a boolean "full transactions" flag; Halyard sends hashes.
    if (params.length > 2 || (params.length === 2 && typeof params[1] !== 'boolean' && params[1] !== null)) {
      return { ok: false, message: `params[1]: ${kind} takes no filter` }
    }
    return { ok: true, value: { kind: kind as 'newHeads' | 'newPendingTransactions' | 'syncing' } }
  }
  if (params.length > 2) return { ok: false, message: 'params[2]: logs takes one filter object' }
  const parsed = logFilterSchema.safeParse(params[1] ?? {})
  if (!parsed.success) return { ok: false, message: `params[1]: ${describeZodError(parsed.error)}` }
  const a = parsed.data.address
  return {
    ok: true,
    value: {
      kind: 'logs',
      filter: {
        addresses: new Set(a === undefined ? [] : Array.isArray(a) ? a : [a]),
        // An empty alternative list is a wildcard in geth's filters, not "matches nothing".
        topics: (parsed.data.topics ?? []).map((t) =>
          t === null || (Array.isArray(t) && t.length === 0) ? null : Array.isArray(t) ? t : [t],
        ),
      },
    },
  }
}

function parseTxKind(kind: typeof MINED | typeof PENDING_TXS, params: readonly unknown[]): SubscribeParse {
  if (params.length > 2) return { ok: false, message: `params[2]: ${kind} takes one options object` }
  if (kind === MINED) {
    const f = parseMinedFilter(params[1])
    return f.ok ? { ok: true, value: { kind, mined: f.value } } : f
  }
  const f = parsePendingFilter(params[1])
  return f.ok ? { ok: true, value: { kind, pending: f.value } } : f
}

export function parseUnsubscribeParams(params: readonly unknown[]): string | undefined {
  const id = params[0]
  return typeof id === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(id) ? id.toLowerCase() : undefined
}

/**
 * A head as an upstream sends it (newHeads push or eth_getBlockByHash). Only what Halyard relies
 * on is checked; the other header fields are passed through to clients untouched.
 */
export const upstreamHeadSchema = z
  .object({
    number: hexString,
    hash: hash32,
    parentHash: hash32,
    timestamp: hexString,
  })
  .passthrough()

export interface Head {
  number: bigint
  hash: Hash
  parentHash: Hash
  /** The header as clients receive it (no transaction list). */
  wire: Record<string, unknown>
}

/** Block fields that are not part of a header: left out of newHeads pushes. */
const NOT_HEADER = new Set(['transactions', 'uncles', 'withdrawals', 'size', 'totalDifficulty'])

export function toHead(raw: unknown): Head | undefined {
  const parsed = upstreamHeadSchema.safeParse(raw)
  if (!parsed.success) return undefined
  const wire: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(parsed.data)) if (!NOT_HEADER.has(k)) wire[k] = v
  return {
    number: BigInt(parsed.data.number),
    hash: toLowerHash(parsed.data.hash),
    parentHash: toLowerHash(parsed.data.parentHash),
    wire,
  }
}

export const upstreamLogSchema = z
  .object({
    address,
    topics: z.array(hash32.transform(toLowerHash)),
    data: hexString,
    blockHash: hash32,
  })
  .passthrough()

export interface ChainLogEntry {
  address: Address
  topics: readonly Hash[]
  /** The log as clients receive it (`removed` is set per push). */
  wire: Record<string, unknown>
}

export function matchesFilter(log: ChainLogEntry, f: LogFilter): boolean {
  if (f.addresses.size > 0 && !f.addresses.has(log.address)) return false
  for (let i = 0; i < f.topics.length; i++) {
    const want = f.topics[i]
    if (want === null || want === undefined) continue
    const got = log.topics[i]
    if (got === undefined || !want.includes(got)) return false
  }
  return true
}
