/**
 * Opaque page keys (`/v1/transfers` cursors, the Alchemy-compatible `pageKey`s): a short text
 * form of a keyset position, base64url so clients pass it back unchanged instead of building
 * their own. Each kind of key checks its own text form (a versioned regex) on the way back.
 */

export function encodeOpaque(text: string): string {
  return Buffer.from(text).toString('base64url')
}

/** The key's text matched against `form`; null for anything not base64url, too long, or another form. */
export function matchOpaque(key: string, form: RegExp, maxLength: number): RegExpExecArray | null {
  if (key.length === 0 || key.length > maxLength || !/^[A-Za-z0-9_-]+$/.test(key)) return null
  return form.exec(Buffer.from(key, 'base64url').toString('latin1'))
}
