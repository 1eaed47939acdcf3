import type { Hex } from 'viem'
import { call } from '../chains/reads.ts'
import type { NetworkRegistry } from '../chains/registry.ts'
import { decodeTokenText, MAX_SYMBOL_CHARS } from '../chains/token-text.ts'
import { isAddress } from '../types.ts'

/**
 * ERC-20 symbol and decimals for event payloads, read once per (network, contract) with
 * eth_call and kept in memory. A token that does not answer gets symbol "" and decimals 0
 * (the event is still delivered; the receiver has the contract address). Symbols go through
 * the shared decoder (bytes32 MKR-style answers, control characters removed).
 */
export interface TokenMeta {
  symbol: string
  decimals: number
}

export class TokenMetadata {
  private readonly cache = new Map<string, Promise<TokenMeta>>()

  constructor(private readonly networks: NetworkRegistry) {}

  get(network: string, contract: string): Promise<TokenMeta> {
    const key = `${network}:${contract}`
    let hit = this.cache.get(key)
    if (!hit) {
      hit = this.load(network, contract)
      if (this.cache.size > 100_000) this.cache.clear()
      this.cache.set(key, hit)
    }
    return hit
  }

  private async load(network: string, contract: string): Promise<TokenMeta> {
    const net = this.networks.getBySlug(network)
    const read = async (data: Hex): Promise<Hex | null> => {
      // Not an address: no node could answer for it (as if it had refused).
      if (!isAddress(contract)) return null
      try {
        const out = await call(net, { to: contract, data })
        return out.length > 2 ? out : null
      } catch {
        return null
      }
    }
    const [symbolRaw, decimalsRaw] = await Promise.all([read('0x95d89b41'), read('0x313ce567')])
    return { symbol: decodeSymbol(symbolRaw), decimals: decodeDecimals(decimalsRaw) }
  }
}

/** The shared decoder (src/chains/token-text.ts); "" when the token has no usable symbol. */
function decodeSymbol(raw: Hex | null): string {
  return decodeTokenText(raw, MAX_SYMBOL_CHARS) ?? ''
}

function decodeDecimals(raw: Hex | null): number {
  if (!raw) return 0
  try {
    const n = BigInt(raw.slice(0, 66))
    return n <= 255n ? Number(n) : 0
  } catch {
    return 0
  }
}
