import { encodeOpaque, matchOpaque } from '../http/opaque-key.ts'
import type { Position } from './store.ts'

/**
 * The opaque page cursor of `/v1/transfers` and the `pageKey` of `alchemy_getAssetTransfers`:
 * the position of the last row served (store.ts), base64url so clients do not take it apart.
 * It carries no filters: a cursor used with other filters is still a valid position, and the
 * page after it is simply the next rows that match.
 */

const FORM = /^t1\.(\d{1,20})\.([01])\.(\d{1,10})\.(\d{1,10})$/
const MAX_BLOCK = 2n ** 63n - 1n
const MAX_INT = 2147483647

export function encodeCursor(p: Position): string {
  return encodeOpaque(`t1.${p.block}.${p.source}.${p.a}.${p.b}`)
}

/** The position, or undefined for anything this module did not make. */
export function decodeCursor(s: string): Position | undefined {
  const m = matchOpaque(s, FORM, 80)
  if (!m) return undefined
  const block = BigInt(m[1] as string)
  const a = Number(m[3])
  const b = Number(m[4])
  if (block > MAX_BLOCK || a > MAX_INT || b > MAX_INT) return undefined
  return { block, source: m[2] === '1' ? 1 : 0, a, b }
}
