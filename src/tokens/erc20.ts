import { decodeTokenText, MAX_NAME_CHARS } from '../chains/token-text.ts'
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
  data: arg ? `${selector}${arg.slice(2).toLowerCase().padStart(64, '0')}` : selector,
})

/** A uint256 answer, or null when the call failed or returned something else. */
export function decodeUint(r: CallResult | undefined): bigint | null {
  if (!r?.success || r.data.length !== 66) return null
  return BigInt(r.data)
}

/** A `string` or `bytes32` answer (name, symbol), cleaned by the shared decoder (src/chains/token-text.ts). */
export function decodeString(r: CallResult | undefined, maxChars = MAX_NAME_CHARS): string | null {
  return r?.success ? decodeTokenText(r.data, maxChars) : null
}
