import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import type { Address } from '../types.ts'

/** The Uniswap token-list format (https://tokenlists.org, @uniswap/token-lists schema), as we read it. */
const tokenInfo = z.object({
  chainId: z.number().int().positive(),
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be an address'),
  name: z.string().min(0).max(60),
  symbol: z.string().min(0).max(20),
  decimals: z.number().int().min(0).max(255),
  logoURI: z.string().max(2000).optional(),
  tags: z.array(z.string()).optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
})

export const tokenListSchema = z.object({
  name: z.string().min(1).max(30),
  timestamp: z.string().min(1),
  version: z.object({
    major: z.number().int().min(0),
    minor: z.number().int().min(0),
    patch: z.number().int().min(0),
  }),
  logoURI: z.string().optional(),
  keywords: z.array(z.string()).optional(),
  tags: z.record(z.string(), z.unknown()).optional(),
  tokens: z.array(tokenInfo).max(10_000),
})

export type TokenList = z.infer<typeof tokenListSchema>

export interface ListedToken {
  name: string
  symbol: string
  decimals: number
  logoURI: string | null
}

/** Parses and validates one token list; the error names the list and the bad field. */
export function parseTokenList(raw: unknown, source: string): TokenList {
  const r = tokenListSchema.safeParse(raw)
  if (!r.success) throw new Error(`token list ${source} is invalid: ${describeZodError(r.error)}`)
  return r.data
}

/** Logos (and names) by chain id and address, from every configured list; the first list wins. */
export class TokenListIndex {
  private readonly byKey = new Map<string, ListedToken>()

  add(list: TokenList): void {
    for (const t of list.tokens) {
      const key = `${t.chainId}:${t.address.toLowerCase()}`
      if (this.byKey.has(key)) continue
      this.byKey.set(key, {
        name: t.name,
        symbol: t.symbol,
        decimals: t.decimals,
        logoURI: t.logoURI && /^(https?|ipfs):\/\//.test(t.logoURI) ? t.logoURI : null,
      })
    }
  }

  get(chainId: number, address: Address): ListedToken | undefined {
    return this.byKey.get(`${chainId}:${address.toLowerCase()}`)
  }

  get size(): number {
    return this.byKey.size
  }

  /** The listed tokens of one chain, in list order (alchemy_getTokenBalances "DEFAULT_TOKENS"). */
  addresses(chainId: number): Address[] {
    const prefix = `${chainId}:`
    const out: Address[] = []
    for (const key of this.byKey.keys())
      if (key.startsWith(prefix)) out.push(key.slice(prefix.length) as Address)
    return out
  }
}

/**
 * Loads lists from files or http(s) URLs (operator-configured, so a plain fetch with a timeout).
 * A list that cannot be read is reported through `onError` and skipped: logos are optional.
 */
export async function loadTokenLists(
  sources: readonly string[],
  onError: (source: string, err: Error) => void,
): Promise<TokenListIndex> {
  const index = new TokenListIndex()
  for (const src of sources) {
    try {
      let raw: unknown
      if (/^https?:\/\//.test(src)) {
        const res = await fetch(src, { signal: AbortSignal.timeout(10_000) })
        if (!res.ok) throw new Error(`HTTP ${res.status}`)
        raw = await res.json()
      } else {
        raw = JSON.parse(readFileSync(src, 'utf8'))
      }
      index.add(parseTokenList(raw, src))
    } catch (err) {
      onError(src, err as Error)
    }
  }
  return index
}
