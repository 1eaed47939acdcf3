import type { Hex } from '../types.ts'

/**
 * The one decoder for text a contract returns from a view call — ERC-20/721/1155 `name()`,
 * `symbol()`, `tokenURI()`, `uri()`, `contractURI()` — used by the token API, the NFT API and
 * webhook payloads alike. Any contract can return anything, so:
 * - ABI `string` answers are read with every offset and length checked against the data;
 *   a 32-byte answer is a `bytes32` (MKR, SAI and other early tokens), trailing NULs dropped;
 * - bytes are UTF-8, invalid sequences become U+FFFD (never an exception, never a lone surrogate);
 * - control characters (C0, DEL, C1) and bidirectional overrides are removed: PostgreSQL text
 *   cannot hold U+0000, and a symbol that reorders the text around it misleads whoever reads it;
 * - an answer longer than `maxChars` is refused (null), not cut: a cut URI or name is wrong.
 * Null means "no usable answer"; callers show null (or "" where a wire shape wants a string).
 */

/** Longest name / symbol kept (longer ones are junk, not names). */
export const MAX_NAME_CHARS = 200
export const MAX_SYMBOL_CHARS = 100

const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })

/** Text from a call's return data, or null when there is none worth showing (see above). */
export function decodeTokenText(data: Hex | null | undefined, maxChars: number): string | null {
  if (!data || !/^0x(?:[0-9a-fA-F]{2})*$/.test(data) || data.length < 66) return null
  const bytes = Buffer.from(data.slice(2), 'hex')
  const raw = bytes.length === 32 ? bytes32(bytes) : abiString(bytes, maxChars)
  if (raw === null) return null
  const clean = cleanText(UTF8.decode(raw))
  return clean === '' || clean.length > maxChars ? null : clean
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\ufeff]/g

/** Removes control and bidi-override characters and surrounding whitespace. */
function cleanText(s: string): string {
  return s.replace(UNSAFE, '').trim()
}

function bytes32(b: Buffer): Buffer {
  let end = b.length
  while (end > 0 && b[end - 1] === 0) end--
  return b.subarray(0, end)
}

/** The bytes of an ABI-encoded `string` (offset word, length word, bytes); null when malformed. */
function abiString(b: Buffer, maxChars: number): Buffer | null {
  const offset = readWord(b, 0)
  if (offset === null || offset + 32n > BigInt(b.length)) return null
  const at = Number(offset)
  const length = readWord(b, at)
  // UTF-8 needs at most 4 bytes a character: a longer string cannot pass maxChars anyway.
  if (length === null || length > BigInt(maxChars) * 4n || at + 32 + Number(length) > b.length) return null
  return b.subarray(at + 32, at + 32 + Number(length))
}

function readWord(b: Buffer, at: number): bigint | null {
  if (at + 32 > b.length) return null
  return BigInt(`0x${b.subarray(at, at + 32).toString('hex')}`)
}
