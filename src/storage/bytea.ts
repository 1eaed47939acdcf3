import { type RawBuilder, sql } from 'kysely'
import type { Hex } from '../types.ts'

/**
 * Addresses and hashes are stored as `bytea` (20 and 32 bytes; migration 0160), not as their
 * 0x-hex text: half the bytes in the row and in every index that carries them. These helpers are
 * the one place the two forms meet. Parameters go in as hex text and are decoded by the
 * database (`decode(…, 'hex')`), so the same SQL works on node-postgres and PGlite, whose bytea
 * parameter and array encodings differ; results come back as hex text (`hexOf`) or, from a
 * kysely select of the raw column, as bytes (`bytesToHex`).
 */

/** A bytea column as it reads in kysely types: node-postgres gives a Buffer, PGlite a Uint8Array. */
export type Bytes = Uint8Array

/** One hex value (0x-prefixed) as a bytea expression. Hex is lowercased: storage keeps one form. */
export function bytea(hex: Hex): RawBuilder<Bytes> {
  return sql<Bytes>`decode(${strip(hex)}, 'hex')`
}

/**
 * Hex values (null allowed) as the text[] parameter of an `unnest`: the statement decodes each
 * element (`decode(x, 'hex')`), as `bytea` does for one value.
 */
export function hexTexts(hexes: readonly (Hex | null)[]): (string | null)[] {
  return hexes.map((h) => (h === null ? null : strip(h)))
}

/** The lowercase 0x-hex text of a bytea column or expression (null stays null). */
export function hexOf(column: string): RawBuilder<Hex> {
  return sql<Hex>`('0x' || encode(${sql.ref(column)}, 'hex'))`
}

/** Bytes read from a bytea column, as lowercase 0x-hex. */
export function bytesToHex<T extends Hex = Hex>(b: Uint8Array): T {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}` as T
}

/** Bytes for a bytea parameter or column value (for kysely inserts in tests and fixtures). */
export function hexToBytes(hex: Hex): Buffer {
  return Buffer.from(strip(hex), 'hex')
}

function strip(hex: string): string {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(hex))
    throw new Error(`not an even-length 0x-hex string: ${hex.slice(0, 80)}`)
  return hex.slice(2).toLowerCase()
}
