import { encodeAbiParameters, stringToHex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { Hex } from '../types.ts'
import { decodeTokenText, MAX_SYMBOL_CHARS } from './token-text.ts'

const str = (s: string) => encodeAbiParameters([{ type: 'string' }], [s])
const word = (n: bigint) => n.toString(16).padStart(64, '0')

describe('decodeTokenText: the one decoder of names, symbols and URIs', () => {
  it('reads ABI strings and bytes32 answers (MKR-style), trailing NULs dropped', () => {
    expect(decodeTokenText(str('Dollar'), 200)).toBe('Dollar')
    expect(decodeTokenText(str('Ünïcødé 🚀'), 200)).toBe('Ünïcødé 🚀')
    expect(decodeTokenText(stringToHex('MKR', { size: 32 }), 200)).toBe('MKR')
  })

  it('removes control characters and bidi overrides, so PostgreSQL and readers get clean text', () => {
    expect(decodeTokenText(str('US\u0000D\u0007C\u009b\n'), 200)).toBe('USDC')
    expect(decodeTokenText(str('\u202eCDSU'), 200)).toBe('CDSU')
    expect(decodeTokenText(stringToHex('A\u0000B', { size: 32 }), 200)).toBe('AB')
    expect(decodeTokenText(str('\u0000\u0001'), 200)).toBeNull()
  })

  it('turns invalid UTF-8 into U+FFFD instead of throwing', () => {
    const bad = `0x${word(32n)}${word(3n)}${'41ff42'.padEnd(64, '0')}` as Hex
    expect(decodeTokenText(bad, 200)).toBe('A\uFFFDB')
    expect(decodeTokenText(`0x${'c3'.padEnd(64, '0')}` as Hex, 200)).toBe('\uFFFD')
  })

  it('answers null for missing, malformed, lying or oversized answers', () => {
    expect(decodeTokenText(null, 200)).toBeNull()
    expect(decodeTokenText('0x', 200)).toBeNull()
    expect(decodeTokenText('0x1234', 200)).toBeNull()
    expect(decodeTokenText(`0x${'0'.repeat(65)}` as Hex, 200)).toBeNull()
    expect(decodeTokenText('0xzz' as Hex, 200)).toBeNull()
    // Offset past the end; length past the end; a 2^255 length.
    expect(decodeTokenText(`0x${word(4096n)}${word(1n)}` as Hex, 200)).toBeNull()
    expect(decodeTokenText(`0x${word(32n)}${word(64n)}${'41'.repeat(32)}` as Hex, 200)).toBeNull()
    expect(decodeTokenText(`0x${word(32n)}${word(2n ** 255n)}` as Hex, 200)).toBeNull()
    expect(decodeTokenText(str('x'.repeat(MAX_SYMBOL_CHARS + 1)), MAX_SYMBOL_CHARS)).toBeNull()
    expect(decodeTokenText(str('x'.repeat(MAX_SYMBOL_CHARS)), MAX_SYMBOL_CHARS)).toHaveLength(
      MAX_SYMBOL_CHARS,
    )
  })
})
