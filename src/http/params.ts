import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { invalidRequest } from '../errors.ts'
import { addressProblem, toLowerAddress } from '../types.ts'

/**
 * The request parameters several features share, each parsed one way with one wording: an
 * address, a page, a uint256.
 */

const MAX_UINT256 = 2n ** 256n - 1n

/* Zod forms: routes declare these in their schemas (the gate parses; OpenAPI and the hostile sweep read them). */

/** An address, lowercased; the message starts with the parameter's name (bad hex or bad checksum). */
export const address = (name: string) =>
  z
    .string({ error: `${name} must be a 0x-prefixed 20-byte hex address` })
    .transform((v, ctx) => {
      const problem = addressProblem(v)
      if (problem === undefined) return toLowerAddress(v)
      ctx.addIssue({ code: 'custom', message: `${name} ${problem}` })
      return z.NEVER
    })
    .meta({
      description: `${name}: a 0x-prefixed 20-byte hex address (a mixed-case one must match its EIP-55 checksum)`,
      example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a',
    })

const UINT = /^(\d{1,78}|0x[0-9a-fA-F]{1,64})$/

/** A uint256 as a decimal or 0x-hex string (with `jsonNumber`, a safe JSON integer too). */
export const uint256 = (name: string, o: { jsonNumber?: boolean } = {}) => {
  const message = `${name} must be a uint256: a decimal integer or 0x hex between 0 and 2^256-1`
  const input = o.jsonNumber
    ? z.union([z.string(), z.number()], { error: message })
    : z.string({ error: message })
  return input
    .transform((v, ctx) => {
      const ok =
        typeof v === 'number' ? Number.isSafeInteger(v) && v >= 0 : UINT.test(v) && BigInt(v) <= MAX_UINT256
      if (ok) return BigInt(v)
      ctx.addIssue({ code: 'custom', message })
      return z.NEVER
    })
    .meta({ description: `${name}: a uint256, as a decimal or 0x-hex string`, example: '1' })
}

/** A decimal integer query parameter in [min, max], `dflt` when absent; else a 400 naming it. */
export const intString = (name: string, min: number, max: number, dflt: number) => {
  const range = `${name} must be an integer between ${min} and ${max}`
  return (
    z
      .string({ error: range })
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return dflt
        const n = /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN
        if (n >= min && n <= max) return n
        ctx.addIssue({ code: 'custom', message: Number.isNaN(n) ? range : `${range} (got ${n})` })
        return z.NEVER
      })
      // What a client sends, for OpenAPI and generated clients: an integer, not any string.
      .meta({
        type: 'integer',
        minimum: min,
        maximum: max,
        description: `${name[0]!.toUpperCase()}${name.slice(1)}, from ${min} to ${max}; ${dflt} when absent`,
        example: dflt,
      } as Record<string, unknown>)
  )
}

/**
 * Listings: `page` (default 1) and `limit` (default per endpoint, maximum 100). Anything
 * but a plain decimal integer in range is a 400 naming the parameter; a page past the end is a
 * valid, empty page.
 */
export const pageQuery = (defaultLimit: number) =>
  z.object({ page: intString('page', 1, 1_000_000, 1), limit: intString('limit', 1, 100, defaultLimit) })

/** A network slug in a path (`ethereum`, `ethereum-devnet`); the gate resolves it (404 when unknown). */
export const chainSlug = z.string().min(1).max(64).meta({
  description: 'The network slug: chain, then network unless it is mainnet (`ethereum`, `ethereum-devnet`)',
  example: 'ethereum-devnet',
})

/** `/{chain}/{network}` (JSON-RPC, WebSocket); the gate resolves the pair (404 when unknown). */
export const networkPair = z.object({
  chain: z
    .string()
    .min(1)
    .max(64)
    .meta({ description: 'The chain (`ethereum`, `solana`)', example: 'ethereum' }),
  network: z
    .string()
    .min(1)
    .max(64)
    .meta({ description: 'The network of the chain (`mainnet`, `sepolia`, `devnet`)', example: 'devnet' }),
})

/** A query flag: `true` or `false` (absent = false). */
export const boolFlag = (name: string, description: string) =>
  z
    .enum(['true', 'false'], { error: `${name} must be true or false` })
    .optional()
    .transform((v) => v === 'true')
    .meta({ description: `${description}; false when absent`, example: 'true' })

/** An opaque id of a given form; the message names the parameter and what it should be. */
export const idParam = (name: string, re: RegExp, what: string, example: string) =>
  z
    .string()
    .superRefine((v, ctx) => {
      if (!re.test(v))
        ctx.addIssue({ code: 'custom', message: `${name}: must be ${what}, got "${v.slice(0, 40)}"` })
    })
    .meta({ description: `${what[0]!.toUpperCase()}${what.slice(1)}`, example })

/**
 * A GET that must carry no body (the large public documents): a body is a client mistake,
 * answered with a 400 in a few bytes rather than with the document while the client is still
 * sending (its connection would be reset mid-answer).
 */
export function refuseBody(
  request: { headers: Record<string, string | string[] | undefined> },
  route: string,
) {
  const length = request.headers['content-length']
  if ((length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined)
    throw invalidRequest(`${route} takes no request body`)
}

/**
 * The one input parser: a 400 naming the problem. Messages of our own (they start with the
 * field's name) pass through; zod's generic ones get the field path. A missing body is an empty
 * one where an object is expected, so the first missing field is named.
 */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: 'path' | 'query' | 'body'): T {
  let v = value
  if (schema instanceof z.ZodObject) {
    v ??= {}
    if (typeof v !== 'object' || Array.isArray(v))
      throw invalidRequest(`the request ${where} must be a JSON object`)
  }
  const r = schema.safeParse(v)
  if (r.success) return r.data
  const issue = r.error.issues[0]
  if (issue && namesItsField(issue, where)) throw invalidRequest(issue.message)
  throw invalidRequest(`${where}: ${describeZodError(r.error)}`)
}

function namesItsField(issue: z.core.$ZodIssue, where: string): boolean {
  const keys = issue.path.filter((p): p is string => typeof p === 'string')
  const name = keys.at(-1) ?? where
  return issue.message.startsWith(`${name} `) || issue.message.startsWith(`${name}: `)
}
