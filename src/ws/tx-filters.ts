import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { type Address, toLowerAddress } from '../types.ts'

/**
 * Alchemy's transaction subscriptions, as the Alchemy-compatible root serves them:
 * `alchemy_minedTransactions` and `alchemy_pendingTransactions`, their parameters as alchemy-sdk
 * 3.6.5 sends them, and the matching of one transaction against a subscriber's filter.
 */

export const MINED = 'alchemy_minedTransactions'
export const PENDING_TXS = 'alchemy_pendingTransactions'

/** Alchemy documents 1,000 addresses per subscription; more is refused, not truncated. */
export const MAX_FILTER_ADDRESSES = 1000

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x address')
  .transform(toLowerAddress)

/** An address or a list of them (a union would report "Invalid input" rather than which entry). */
const oneOrMany = z.preprocess(
  (v) => (typeof v === 'string' ? [v] : v),
  z
    .array(address, 'must be an address or a list of addresses')
    .max(MAX_FILTER_ADDRESSES, `has more than ${MAX_FILTER_ADDRESSES} addresses`),
)

// Unknown fields are ignored (clients add their own); nulls count as absent, as the SDK's
// undefined fields do once serialised.
const minedSchema = z
  .object({
    addresses: z
      .array(
        z
          .object({ from: address.nullish(), to: address.nullish() })
          .refine((a) => a.from != null || a.to != null, 'needs from or to'),
      )
      .max(MAX_FILTER_ADDRESSES, `has more than ${MAX_FILTER_ADDRESSES} entries`)
      .nullish(),
    includeRemoved: z.boolean().nullish(),
    hashesOnly: z.boolean().nullish(),
  })
  .strip()

const pendingSchema = z
  .object({
    fromAddress: oneOrMany.nullish(),
    toAddress: oneOrMany.nullish(),
    hashesOnly: z.boolean().nullish(),
  })
  .strip()

export interface AddressPair {
  readonly from?: Address
  readonly to?: Address
}

export interface MinedFilter {
  /** A transaction matches when any pair does (each pair: every address it names); empty = any. */
  readonly addresses: readonly AddressPair[]
  /** `addresses` as sets, so a transaction is matched in three lookups, not up to 1,000 compares. */
  readonly index: PairIndex
  readonly includeRemoved: boolean
  readonly hashesOnly: boolean
}

interface PairIndex {
  readonly fromOnly: ReadonlySet<Address>
  readonly toOnly: ReadonlySet<Address>
  /** `${from}${to}` of the pairs that name both. */
  readonly both: ReadonlySet<string>
}

function indexPairs(pairs: readonly AddressPair[]): PairIndex {
  const fromOnly = new Set<Address>()
  const toOnly = new Set<Address>()
  const both = new Set<string>()
  for (const p of pairs) {
    if (p.from !== undefined && p.to !== undefined) both.add(`${p.from}${p.to}`)
    else if (p.from !== undefined) fromOnly.add(p.from)
    else if (p.to !== undefined) toOnly.add(p.to)
  }
  return { fromOnly, toOnly, both }
}

export interface PendingFilter {
  /** A transaction matches when it is from one of `from` or to one of `to`; both empty = any. */
  readonly from: ReadonlySet<Address>
  readonly to: ReadonlySet<Address>
  readonly hashesOnly: boolean
}

type Parsed<T> = { ok: true; value: T } | { ok: false; message: string }

export function parseMinedFilter(raw: unknown): Parsed<MinedFilter> {
  const parsed = minedSchema.safeParse(raw ?? {})
  if (!parsed.success) return { ok: false, message: `params[1]: ${describeZodError(parsed.error)}` }
  const addresses: AddressPair[] = (parsed.data.addresses ?? []).map((a) => ({
    ...(a.from != null ? { from: a.from } : {}),
    ...(a.to != null ? { to: a.to } : {}),
  }))
  return {
    ok: true,
    value: {
      addresses,
      index: indexPairs(addresses),
      includeRemoved: parsed.data.includeRemoved ?? false,
      hashesOnly: parsed.data.hashesOnly ?? false,
    },
  }
}

export function parsePendingFilter(raw: unknown): Parsed<PendingFilter> {
  const parsed = pendingSchema.safeParse(raw ?? {})
  if (!parsed.success) return { ok: false, message: `params[1]: ${describeZodError(parsed.error)}` }
  const from = parsed.data.fromAddress ?? []
  const to = parsed.data.toAddress ?? []
  if (from.length + to.length > MAX_FILTER_ADDRESSES) {
    return {
      ok: false,
      message: `params[1]: fromAddress and toAddress name more than ${MAX_FILTER_ADDRESSES} addresses together`,
    }
  }
  return {
    ok: true,
    value: { from: new Set(from), to: new Set(to), hashesOnly: parsed.data.hashesOnly ?? false },
  }
}

/** A transaction as an upstream returns it: what matching relies on, the rest passed through. */
export const upstreamTxSchema = z
  .object({
    hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    from: address,
    to: address.nullish(),
  })
  .passthrough()

export interface ChainTx {
  readonly hash: string
  readonly from: Address
  /** Null for a contract creation. */
  readonly to: Address | null
  /** The transaction as clients receive it. */
  readonly wire: Record<string, unknown>
}

export function toChainTx(raw: unknown): ChainTx | undefined {
  const parsed = upstreamTxSchema.safeParse(raw)
  if (!parsed.success) return undefined
  return {
    hash: parsed.data.hash.toLowerCase(),
    from: parsed.data.from,
    to: parsed.data.to ?? null,
    wire: raw as Record<string, unknown>,
  }
}

export function matchesMined(tx: ChainTx, f: MinedFilter): boolean {
  if (f.addresses.length === 0) return true
  const { fromOnly, toOnly, both } = f.index
  if (fromOnly.has(tx.from)) return true
  // A contract creation (no `to`) matches only pairs that name no `to`.
  return tx.to !== null && (toOnly.has(tx.to) || both.has(`${tx.from}${tx.to}`))
}

export function matchesPending(tx: ChainTx, f: PendingFilter): boolean {
  if (f.from.size === 0 && f.to.size === 0) return true
  return f.from.has(tx.from) || (tx.to !== null && f.to.has(tx.to))
}

/** Whether a pending subscriber needs the transaction itself, or its hash is enough. */
export function needsPendingBody(f: PendingFilter): boolean {
  return !f.hashesOnly || f.from.size > 0 || f.to.size > 0
}
