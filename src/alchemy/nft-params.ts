import { z } from 'zod'
import { invalidRequest } from '../errors.ts'
import { address, uint256 } from '../http/params.ts'

/**
 * The parameters of the NFT API v3 methods as Alchemy's clients send them: a query string
 * (axios writes arrays as `key[]=a&key[]=b`, others as `key=a&key=b`) or, for POST, a JSON body
 * whose values are real booleans, numbers and arrays. Each schema accepts both forms and
 * names the parameter in every refusal.
 */

/** Query or body values, keyed by parameter name (`[]` dropped), in an object with no prototype. */
export type RawParams = Record<string, unknown>

/**
 * The route's query: Fastify's parser gives `{ 'key[]': [...] }`, `{ key: [...] }` for a
 * repeated key and `{ key: 'a' }` once. `key[]` is always a list; a list given with and
 * without brackets is joined. Scoped to these routes: the global parser is untouched.
 */
export const alchemyQuery = z.unknown().transform((q): RawParams => {
  const out: RawParams = Object.create(null)
  if (q === null || typeof q !== 'object') return out
  for (const [rawKey, v] of Object.entries(q)) {
    const list = rawKey.endsWith('[]')
    const key = list ? rawKey.slice(0, -2) : rawKey
    const values = Array.isArray(v) ? v : [v]
    const prev = out[key]
    if (prev !== undefined) out[key] = [...(Array.isArray(prev) ? prev : [prev]), ...values]
    else out[key] = list || values.length > 1 ? values : values[0]
  }
  return out
})

/** The query, with a POST's JSON body over it (a body must be an object). */
export function mergeParams(query: RawParams, body: unknown): RawParams {
  if (body === undefined || body === null) return query
  if (typeof body !== 'object' || Array.isArray(body))
    throw invalidRequest('the request body must be a JSON object')
  const out: RawParams = Object.create(null)
  for (const [k, v] of Object.entries(query)) out[k] = v
  for (const [k, v] of Object.entries(body)) out[k] = v
  return out
}

const once = (name: string) =>
  z.string({
    error: (iss) =>
      iss.input === undefined ? `${name} is required` : `${name} must be given once, as a string`,
  })

/** `true`/`false` as a JSON boolean or a string; absent = `dflt`. */
const flag = (name: string, dflt: boolean) =>
  z
    .union([z.boolean(), z.enum(['true', 'false'])], { error: `${name} must be true or false` })
    .optional()
    .transform((v) => (v === undefined ? dflt : v === true || v === 'true'))

/** A whole number in range, as a JSON number or a decimal string; absent = `dflt`. */
const int = (name: string, min: number, max: number, dflt: number) => {
  const message = `${name} must be an integer between ${min} and ${max}`
  return z
    .union([z.number(), z.string()], { error: message })
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return dflt
      const n = typeof v === 'number' ? v : /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN
      if (Number.isInteger(n) && n >= min && n <= max) return n
      ctx.addIssue({ code: 'custom', message })
      return z.NEVER
    })
}

/** A list: an array, or one value given alone (`key=a`). */
const list = <T extends z.ZodType>(name: string, item: T, max: number) =>
  z
    .union([z.array(z.unknown()), z.string()], { error: `${name} must be a list` })
    .transform((v) => (Array.isArray(v) ? v : [v]))
    .pipe(z.array(item).max(max, { error: `${name} takes at most ${max} entries` }))

/** A token id as Alchemy takes it: decimal or 0x hex, a string or a safe JSON integer. */
const tokenId = (name: string) => uint256(name, { jsonNumber: true })

/** An opaque page key (checked by the method that issued it). */
const pageKey = z.string({ error: 'pageKey must be a string' }).max(200, { error: 'pageKey is too long' })

const tokenType = z
  .string({ error: 'tokenType must be ERC721 or ERC1155' })
  .transform((v) => v.toUpperCase())
  .pipe(z.enum(['ERC721', 'ERC1155'], { error: 'tokenType must be ERC721 or ERC1155' }))

/** A hint Alchemy takes (how long to wait for a token URI); Halyard's configured timeout applies. */
const uriTimeout = int('tokenUriTimeoutInMs', 0, 600_000, 0)

const filters = (name: string) =>
  list(name, z.enum(['SPAM', 'AIRDROPS'], { error: `${name} entries must be SPAM or AIRDROPS` }), 2)

export const forOwner = z.object({
  owner: once('owner').pipe(address('owner')),
  contractAddresses: list('contractAddresses', address('contractAddresses'), 45).optional(),
  withMetadata: flag('withMetadata', true),
  pageKey: pageKey.optional(),
  pageSize: int('pageSize', 1, 100, 100),
  orderBy: z.string({ error: 'orderBy must be a string' }).optional(),
  excludeFilters: filters('excludeFilters').optional(),
  includeFilters: filters('includeFilters').optional(),
  tokenUriTimeoutInMs: uriTimeout,
})

export const nftMetadata = z.object({
  contractAddress: once('contractAddress').pipe(address('contractAddress')),
  tokenId: tokenId('tokenId'),
  tokenType: tokenType.optional(),
  refreshCache: flag('refreshCache', false),
  tokenUriTimeoutInMs: uriTimeout,
})

export const nftMetadataBatch = z.object({
  tokens: z
    .array(
      z.object({
        contractAddress: address('contractAddress'),
        tokenId: tokenId('tokenId'),
        tokenType: tokenType.optional(),
      }),
      { error: 'tokens must be a list of {contractAddress, tokenId}' },
    )
    .min(1, { error: 'tokens must name at least one token' })
    .max(100, { error: 'tokens takes at most 100 entries' }),
  refreshCache: flag('refreshCache', false),
  tokenUriTimeoutInMs: uriTimeout,
})

export const contractMetadata = z.object({
  contractAddress: once('contractAddress').pipe(address('contractAddress')),
})

export const contractMetadataBatch = z.object({
  contractAddresses: z
    .array(address('contractAddresses'), { error: 'contractAddresses must be a list of addresses' })
    .min(1, { error: 'contractAddresses must name at least one contract' })
    .max(100, { error: 'contractAddresses takes at most 100 entries' }),
})

export const forContract = z.object({
  contractAddress: once('contractAddress').pipe(address('contractAddress')),
  withMetadata: flag('withMetadata', true),
  startToken: tokenId('startToken').optional(),
  pageKey: pageKey.optional(),
  limit: int('limit', 1, 100, 100),
  tokenUriTimeoutInMs: uriTimeout,
})

export const ownersForNft = z.object({
  contractAddress: once('contractAddress').pipe(address('contractAddress')),
  tokenId: tokenId('tokenId'),
  pageKey: pageKey.optional(),
  pageSize: int('pageSize', 1, 1000, 1000),
})

export const ownersForContract = z.object({
  contractAddress: once('contractAddress').pipe(address('contractAddress')),
  withTokenBalances: flag('withTokenBalances', false),
  includeCount: flag('includeCount', false),
  pageKey: pageKey.optional(),
  block: z.unknown().optional(),
})
