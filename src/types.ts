import { checksumAddress } from 'viem'

/** Branded primitives: a Hex is 0x-prefixed, an Address is 20 bytes lowercase in storage. */
export type Hex = `0x${string}`
export type Address = Hex & { readonly __brand?: 'Address' }
export type Hash = Hex & { readonly __brand?: 'Hash' }

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const HASH_RE = /^0x[0-9a-fA-F]{64}$/

export const isAddress = (v: unknown): v is Address => typeof v === 'string' && ADDRESS_RE.test(v)
export const isHash = (v: unknown): v is Hash => typeof v === 'string' && HASH_RE.test(v)
export const toLowerAddress = (v: string): Address => v.toLowerCase() as Address
/** A 32-byte hash already checked (schema or isHash), lowercase as storage keeps it. */
export const toLowerHash = (v: string): Hash => v.toLowerCase() as Hash

/**
 * What is wrong with an address a client sent, as the end of a message that starts with the
 * parameter's name; undefined when it is fine. All-lowercase and all-uppercase hex carry no
 * checksum; mixed case is an EIP-55 checksum and must match, so a mistyped character is caught.
 */
export function addressProblem(v: unknown): string | undefined {
  if (!isAddress(v)) return 'must be a 0x-prefixed 20-byte hex address'
  const hex = v.slice(2)
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return undefined
  if (checksumAddress(v.toLowerCase() as Address) === v) return undefined
  return 'has a wrong EIP-55 checksum (its mixed case does not match); send it checksummed or in lowercase'
}

/** One page of a listing: `page` from 1, `limit` at most 100. */
export interface Page {
  page: number
  limit: number
}

export function slicePage<T>(items: readonly T[], p: Page): T[] {
  const start = (p.page - 1) * p.limit
  return items.slice(start, start + p.limit)
}
