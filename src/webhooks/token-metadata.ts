import type { Hex } from 'viem'
import type { NetworkRegistry } from '../chains/registry.ts'
import { decodeTokenText, MAX_SYMBOL_CHARS } from '../chains/token-text.ts'

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
    const pool = this.networks.getBySlug(network).pool
    const call = async (data: Hex): Promise<Hex | null> => {
      try {
        const out = await pool.call('eth_call', [{ to: contract, data }, 'latest'])
        return typeof out.result === 'string' && out.result.length > 2 ? (out.result as Hex) : null
      } catch {
        return null
      }
    }
    const [symbolRaw, decimalsRaw] = await Promise.all([call('0x95d89b41'), call('0x313ce567')])
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
