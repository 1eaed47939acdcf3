import { type RawBuilder, sql } from 'kysely'
import type { Hex } from '../types.ts'

/**
 * Addresses and hashes are stored as `bytea` (20 and 32 bytes; migration 0160), not as their
 * 0x-hex text: half the bytes in the row and in every index that carries them. These helpers are
 * the one place the two forms meet. Parameters go in as hex text and are decoded by the
 * database (`decode(…, 'hex')`), so the same SQL works on node-postgres and PGlite, whose bytea
 * parameter and array encodings differ; results come back as hex text (`hexOf`) or, from a
 * kysely select of the raw column, as bytes (`bytesToHex`).
 *
 * Bulk writes (src/indexer/store.ts) send a column of fixed-size values instead as one `bytea`
 * parameter, the values end to end (`packed`), and cut it with `substring` by row number: both
 * drivers pass a Buffer as one bytea, node-postgres in binary, so neither Node nor the database
 * formats or parses a text array element or a hex string per value (docs/storage.md).
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

/** A column of `size`-byte values (null allowed) end to end, and where the nulls are (1-based). */
export interface Packed {
  bytes: Buffer
  /** Row numbers (1-based, as `with ordinality` counts) whose value is null; their bytes are 0. */
  nulls: number[]
}

/** Packs 0x-hex values of `size` bytes each (lowercase or not: bytes are bytes) into one Buffer. */
export function packed(hexes: readonly (Hex | null)[], size: number): Packed {
  const bytes = Buffer.alloc(hexes.length * size)
  const nulls: number[] = []
  for (let i = 0; i < hexes.length; i++) {
    const h = hexes[i]
    if (h === null || h === undefined) {
      nulls.push(i + 1)
      continue
    }
    // Buffer's hex decoding stops at the first character that is not hex: a short count is a
    // malformed value, refused as strip() refuses it.
    if (
      h.length !== 2 + 2 * size ||
      h.charCodeAt(0) !== 48 ||
      (h.charCodeAt(1) | 32) !== 120 ||
      bytes.write(h.slice(2), i * size, size, 'hex') !== size
    )
      throw new Error(`not a ${size}-byte 0x-hex string: ${String(h).slice(0, 80)}`)
  }
  return { bytes, nulls }
}

/**
 * Value `row` (1-based) of a packed column, as a bytea expression: `row` names the statement's
 * ordinality column. Nulls come back as null.
 */
export function unpack(p: Packed, size: number, row: RawBuilder<unknown>): RawBuilder<Bytes> {
  const cut = sql<Bytes>`substring(${p.bytes}::bytea from (${row}::integer - 1) * ${sql.lit(size)} + 1 for ${sql.lit(size)})`
  if (p.nulls.length === 0) return cut
  return sql<Bytes>`case when ${row}::integer = any(${p.nulls}::integer[]) then null else ${cut} end`
}

function strip(hex: string): string {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(hex))
    throw new Error(`not an even-length 0x-hex string: ${hex.slice(0, 80)}`)
  return hex.slice(2).toLowerCase()
}
