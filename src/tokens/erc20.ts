import { hexToString } from 'viem'
import type { Address, Hex } from '../types.ts'
import type { CallResult, ContractCall } from './multicall.ts'

/** Selectors of the ERC-20 views we read (keccak256 of the signature, first 4 bytes). */
export const SELECTORS = {
  name: '0x06fdde03',
  symbol: '0x95d89b41',
  decimals: '0x313ce567',
  totalSupply: '0x18160ddd',
  balanceOf: '0x70a08231',
} as const

export const call = (target: Address, selector: Hex, arg?: Address): ContractCall => ({
  target,
  data: arg ? (`${selector}${arg.slice(2).toLowerCase().padStart(64, '0')}` as Hex) : selector,
})

/** A uint256 answer, or null when the call failed or returned something else. */
export function decodeUint(r: CallResult | undefined): bigint | null {
  if (!r?.success || r.data.length !== 66) return null
  return BigInt(r.data)
}

/**
 * A `string` answer, or a `bytes32` one (MKR, SAI and other early tokens): both are accepted.
 * Bytes are decoded as UTF-8 with trailing NULs dropped; control characters are removed.
 */
export function decodeString(r: CallResult | undefined): string | null {
  if (!r?.success || r.data.length < 66) return null
  const d = r.data
  if (d.length === 66) return clean(hexToString(d as Hex, { size: 32 }))
  const offset = BigInt(`0x${d.slice(2, 66)}`)
  if (offset !== 32n || d.length < 130) return null
  const len = Number(BigInt(`0x${d.slice(66, 130)}`))
  if (len > 1024 || d.length < 130 + len * 2) return null
  return clean(Buffer.from(d.slice(130, 130 + len * 2), 'hex').toString('utf8'))
}

function clean(s: string): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  const out = s.replace(/\u0000+$/, '').replace(/[\u0000-\u001f\u007f]/g, '')
  return out === '' ? null : out
}
