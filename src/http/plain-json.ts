/**
 * Request bodies are parsed as Fastify does, with secure-json-parse: JSON.parse, then — when the
 * text matches a pattern for a `__proto__` or `constructor` key, written plainly or with `\u`
 * escapes — a walk of the value that refuses such keys. That pattern is a regular expression
 * run over every body, ≈ as costly as the parse of a small JSON-RPC call.
 *
 * A text with neither word and no `\u` escape cannot hold such a key, and for it the parser's
 * answer is JSON.parse's; `indexOf` over a few hundred bytes costs next to nothing. Every other
 * text, and every text JSON.parse refuses (so the error is the parser's own, word for word),
 * goes to the secure parser: NOT_PLAIN says so.
 */
export const NOT_PLAIN: unique symbol = Symbol('not plain JSON')

export function plainJson(text: string): unknown {
  if (text.indexOf('\\u') !== -1 || text.indexOf('__proto__') !== -1 || text.indexOf('constructor') !== -1)
    return NOT_PLAIN
  try {
    return JSON.parse(text) as unknown
  } catch {
    return NOT_PLAIN
  }
}
