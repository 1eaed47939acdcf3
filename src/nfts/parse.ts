import { numberToDecimal } from '../common/decimal.ts'
import { expandId } from './uri.ts'

/** The fields Halyard reads out of a metadata document (ERC-721 / ERC-1155 metadata JSON). */
export interface ParsedMetadata {
  name: string | null
  description: string | null
  /** As published (may be ipfs://, ar://, data:, https://). */
  image: string | null
  traits: Trait[]
}

export interface Trait {
  trait_type: string
  value: string
}

/** Caps so that one hostile document cannot bloat every response that lists it. */
const MAX_TEXT = 10_000
const MAX_TRAITS = 200
/**
 * Images are often whole `data:` URIs (on-chain SVG), far past MAX_TEXT; a cut URI is a broken
 * image, so an image is kept whole up to this length and dropped (null) beyond it.
 */
const MAX_IMAGE = 256_000

/**
 * Reads name, description, image and traits. Documents in the wild disagree on shapes: `image`
 * or `image_url`; `attributes` as an array of {trait_type, value} or as a plain object; values
 * as strings, numbers or booleans — all become strings. For ERC-1155, `{id}` inside
 * values is substituted like in the URI (EIP-1155 asks clients to do so).
 */
export function parseMetadata(doc: Record<string, unknown>, erc1155Id: bigint | null): ParsedMetadata {
  const text = (v: unknown): string | null => {
    if (typeof v !== 'string' || v.trim() === '') return null
    const s = v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) : v
    return erc1155Id === null ? s : expandId(s, erc1155Id)
  }
  return {
    name: text(doc.name) ?? text(doc.title),
    description: text(doc.description),
    image: image(doc.image, erc1155Id) ?? image(doc.image_url, erc1155Id) ?? svgImage(doc.image_data),
    traits: traits(doc.attributes ?? doc.traits).slice(0, MAX_TRAITS),
  }
}

function image(v: unknown, erc1155Id: bigint | null): string | null {
  if (typeof v !== 'string' || v.trim() === '' || v.length > MAX_IMAGE) return null
  return erc1155Id === null ? v : expandId(v, erc1155Id)
}

/** `image_data` is raw SVG (OpenSea's convention): served as a data: URI. */
function svgImage(v: unknown): string | null {
  if (typeof v !== 'string' || !v.trimStart().startsWith('<svg')) return null
  const uri = `data:image/svg+xml;base64,${Buffer.from(v).toString('base64')}`
  return uri.length > MAX_IMAGE ? null : uri
}

function traits(raw: unknown): Trait[] {
  if (Array.isArray(raw)) {
    const out: Trait[] = []
    for (const item of raw) {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) continue
      const t = item as Record<string, unknown>
      const value = stringify(t.value)
      if (value === null) continue
      const type = stringify(t.trait_type) ?? stringify(t.type) ?? stringify(t.key) ?? ''
      out.push({ trait_type: type, value })
    }
    return out
  }
  if (raw !== null && typeof raw === 'object') {
    return Object.entries(raw as Record<string, unknown>).flatMap(([k, v]) => {
      const value = stringify(v)
      return value === null ? [] : [{ trait_type: k, value }]
    })
  }
  return []
}

/** Trait values as strings: numbers without exponent notation, booleans as true/false. */
function stringify(v: unknown): string | null {
  if (typeof v === 'string') return v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) : v
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null
    return v < 0 ? `-${numberToDecimal(-v)}` : numberToDecimal(v)
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  return null
}
