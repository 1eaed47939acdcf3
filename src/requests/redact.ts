/**
 * What the request explorer keeps of a call's params and answer, and what it never keeps.
 *
 * Secrets, as decided here (docs/request-explorer.md says the same):
 * - The API key. Never recorded: a request is recorded by its key's id (shown with the key's name
 *   and display prefix). Keys in URLs (the Alchemy-compatible `/v2/<key>` path, `?apiKey=`) never
 *   reach the record: it holds the surface and the network, not the URL.
 * - Key material and signatures. Methods that take passwords or private keys, or that sign
 *   (`personal_*`, `eth_sign`, `eth_signTransaction`, `eth_signTypedData*`, and the wallet
 *   methods `wallet_*`), have params and answer replaced whole.
 * - Signed transactions not yet mined: `eth_sendRawTransaction`'s (and its variants') payload is a
 *   bearer instrument (anyone holding it can broadcast it, e.g. after the sender replaced it);
 *   it is kept as its length only. Its answer (the hash) is kept.
 * - Members named like credentials anywhere in params (`signature`, `password`, `privateKey`,
 *   `secret`, `mnemonic`, `seed`, `authorization`, `apiKey`, `token`, …): an ERC-4337 user
 *   operation's `signature`, a paymaster context's secrets.
 * Everything else is public chain data or the caller's own input, kept up to PARAMS_CAP and
 * ANSWER_CAP characters (longer text is cut and says so).
 */

/** Longest params text kept per call, in characters (JSON). */
export const PARAMS_CAP = 4096
/** Longest answer text kept per call, in characters (the JSON-RPC response object). */
export const ANSWER_CAP = 4096

export const REDACTED = '[redacted]'

const SECRET_METHOD = /^(personal_|wallet_|eth_sign$|eth_signTransaction$|eth_signTypedData)/
const RAW_TX_METHOD =
  /^(eth_sendRawTransaction|eth_sendRawTransactionSync|eth_sendPrivateTransaction|eth_sendBundle)/
const SECRET_MEMBER =
  /^(signature|signatures|password|passphrase|private_?key|secret|client_?secret|mnemonic|seed|seed_?phrase|authorization|api_?key|access_?token|token|jwt)$/i

/** Whether a method's params and answer are never kept. */
export function isSecretMethod(method: string): boolean {
  return SECRET_METHOD.test(method)
}

/** A JSON text cut to `cap` characters, saying how long it was. */
export function capText(text: string, cap: number): string {
  if (text.length <= cap) return text
  // A copy, not a slice: V8's sliced string would hold the whole (maybe megabytes) text until
  // the flush.
  const head = Buffer.from(text.slice(0, cap), 'utf8').toString('utf8')
  return `${head}… [cut: ${text.length} characters in all]`
}

/** Credential-named members replaced, at any depth (bounded: deeper than 32 levels is cut). */
function scrub(v: unknown, depth: number): unknown {
  if (depth > 32) return '[too deep]'
  if (Array.isArray(v)) return v.map((x) => scrub(x, depth + 1))
  if (v === null || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) out[k] = SECRET_MEMBER.test(k) ? REDACTED : scrub(x, depth + 1)
  return out
}

/** A call's params as kept: redacted, as capped JSON text. */
export function keptParams(method: string, params: unknown): string | null {
  if (params === undefined) return null
  if (isSecretMethod(method)) return JSON.stringify(REDACTED)
  if (RAW_TX_METHOD.test(method) && Array.isArray(params)) {
    const kept = params.map((p, i) =>
      i === 0 && typeof p === 'string'
        ? `[redacted signed transaction: ${Math.max(0, (p.length - 2) / 2)} bytes]`
        : scrub(p, 1),
    )
    return capText(JSON.stringify(kept), PARAMS_CAP)
  }
  return capText(JSON.stringify(scrub(params, 0)) ?? 'null', PARAMS_CAP)
}

/**
 * A call's answer as kept: the response object's text, capped; a secret method's result is
 * replaced (its error, if any, is kept: errors carry no key material).
 */
export function keptAnswer(
  method: string,
  answer: string | undefined,
  code: number | undefined,
): string | null {
  if (answer === undefined) return null
  if (isSecretMethod(method) && code === undefined) return JSON.stringify({ result: REDACTED })
  return capText(answer, ANSWER_CAP)
}
