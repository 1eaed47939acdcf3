/** Branded primitives: a Hex is 0x-prefixed, an Address is 20 bytes lowercase in storage. */
export type Hex = `0x${string}`
export type Address = Hex & { readonly __brand?: 'Address' }
export type Hash = Hex & { readonly __brand?: 'Hash' }

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const HASH_RE = /^0x[0-9a-fA-F]{64}$/

export const isAddress = (v: unknown): v is Address => typeof v === 'string' && ADDRESS_RE.test(v)
export const isHash = (v: unknown): v is Hash => typeof v === 'string' && HASH_RE.test(v)
export const toLowerAddress = (v: string): Address => v.toLowerCase() as Address
