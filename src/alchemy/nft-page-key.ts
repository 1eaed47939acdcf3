import { invalidRequest } from '../errors.ts'
import { encodeOpaque as encode, matchOpaque } from '../http/opaque-key.ts'
import type { Address } from '../types.ts'

/**
 * The opaque `pageKey`s of the Alchemy-compatible NFT API: the position after which the next
 * page starts (keyset, never an offset), opaque (src/http/opaque-key.ts). A key
 * carries no filters: used with other parameters it is still a position.
 */

const ADDR = '0x[0-9a-f]{40}'
const ID = '\\d{1,78}'
const OWNED = new RegExp(`^o1\\.(${ADDR})\\.(${ID})$`)
const TOKEN = new RegExp(`^t1\\.(${ID})$`)
const HOLDER = new RegExp(`^h1\\.(${ADDR})$`)
const MAX_UINT256 = 2n ** 256n - 1n

function decode(key: string, form: RegExp): RegExpExecArray {
  const m = matchOpaque(key, form, 200)
  if (!m)
    throw invalidRequest(
      'pageKey is not a page key this server issued: pass the pageKey of the previous answer unchanged',
    )
  return m
}

function tokenId(s: string): bigint {
  const v = BigInt(s)
  if (v > MAX_UINT256)
    throw invalidRequest('pageKey is not a page key this server issued (token id out of range)')
  return v
}

/** getNFTsForOwner: after (contract, token id). */
export const ownedKey = {
  encode: (contract: Address, id: bigint) => encode(`o1.${contract}.${id}`),
  decode: (key: string) => {
    const m = decode(key, OWNED)
    return { contract: m[1] as Address, tokenId: tokenId(m[2] as string) }
  },
}

/** getNFTsForContract: the next token id (inclusive, like `startToken`). */
export const tokenKey = {
  encode: (next: bigint) => encode(`t1.${next}`),
  decode: (key: string) => tokenId(decode(key, TOKEN)[1] as string),
}

/** getOwnersForNFT / getOwnersForContract: after this holder. */
export const holderKey = {
  encode: (holder: Address) => encode(`h1.${holder}`),
  decode: (key: string) => decode(key, HOLDER)[1] as Address,
}
