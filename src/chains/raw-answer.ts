/**
 * A node's successful answer forwarded as its bytes: the gateway splices the result's JSON text
 * into the client's answer instead of parsing it and writing it out again (docs/gateway.md,
 * "Results are forwarded as the node's bytes"). Only the answer's frame is checked here —
 * `{"jsonrpc":"2.0","id":<ours>,"result":<value>}` with nothing after the value — which is how
 * geth, anvil, reth, Erigon and Nethermind write it; any other shape (an error, other key order,
 * another id) is parsed as before.
 */
export class RawResult {
  private parsed: unknown
  private done = false

  constructor(
    /** The result's JSON text, exactly as the node wrote it. */
    readonly json: string,
  ) {}

  /** The result as a value, parsed on first use (a reader that needs it: chain reads, the head). */
  get result(): unknown {
    if (!this.done) {
      this.parsed = JSON.parse(this.json)
      this.done = true
    }
    return this.parsed
  }

  /** Never set: the type's half that says "no error" (RpcOutcome's success shape). */
  declare readonly error?: undefined
}

const FRAME = '{"jsonrpc":"2.0","id":'
const RESULT = ',"result":'

/** The result's JSON text of an answer to request `id`, when the answer has the common frame. */
export function rawResultText(text: string, id: number): string | undefined {
  if (!text.startsWith(FRAME)) return undefined
  const idText = String(id)
  let i = FRAME.length
  if (!text.startsWith(idText, i)) return undefined
  i += idText.length
  if (!text.startsWith(RESULT, i)) return undefined
  const start = i + RESULT.length
  const end = valueEnd(text, start)
  if (end < 0) return undefined
  let j = end
  while (j < text.length && isSpace(text.charCodeAt(j))) j++
  if (text.charCodeAt(j) !== 0x7d /* } */) return undefined
  j++
  while (j < text.length && isSpace(text.charCodeAt(j))) j++
  return j === text.length && end > start ? text.slice(start, end) : undefined
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

/**
 * Where the JSON value starting at `start` ends (the index after it), or -1 when its brackets
 * or strings do not close. Strings are skipped whole (escapes included) and brackets counted:
 * enough to find the value's extent and so the trailing `}` of the frame. What is inside the
 * value is the node's JSON, passed on as the node wrote it.
 */
export function valueEnd(text: string, start: number): number {
  const n = text.length
  let i = start
  let depth = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      // The closing quote: the next one not escaped (most strings have no backslash at all).
      let q = text.indexOf('"', i + 1)
      while (q > 0 && text.charCodeAt(q - 1) === 0x5c && escaped(text, q, i + 1)) q = text.indexOf('"', q + 1)
      if (q < 0) return -1
      i = q + 1
      if (depth === 0) return i
      continue
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) depth++
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (depth === 0) return i
      depth--
      if (depth === 0) return i + 1
    } else if (depth === 0 && (c === 0x2c /* , */ || isSpace(c))) return i
    i++
  }
  return depth === 0 && i > start ? i : -1
}

/** Whether the quote at `q` is escaped: an odd run of backslashes before it, inside the string. */
function escaped(text: string, q: number, from: number): boolean {
  let backslashes = 0
  for (let k = q - 1; k >= from && text.charCodeAt(k) === 0x5c; k--) backslashes++
  return backslashes % 2 === 1
}
