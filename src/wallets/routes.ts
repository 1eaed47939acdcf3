import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { HalyardError, invalidRequest } from '../errors.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import { parsePage } from '../tokens/pagination.ts'
import { addressParam } from '../tokens/routes.ts'
import { isAddress, toLowerAddress } from '../types.ts'
import type { WalletService } from './service.ts'

const MAX_UINT256 = 2n ** 256n - 1n

const createBodySchema = z.object({
  owner: z
    .string({ error: 'owner is required: the 0x-prefixed address of the owning account' })
    .refine(isAddress, 'owner must be a 0x-prefixed 20-byte hex address'),
  chain: z
    .string({ error: 'chain is required (a network slug such as ethereum-devnet)' })
    .min(1, 'chain is required'),
  salt: z
    .union([z.string(), z.number()], { error: 'salt must be a uint256 as a decimal or 0x-hex string' })
    .optional(),
})

const listQuerySchema = z.object({
  chain: z
    .string({ error: 'chain must be a single network slug' })
    .min(1, 'chain must not be empty')
    .optional(),
})

/** `salt`: a uint256 as a decimal or 0x-hex string (a small JSON integer is accepted too); default 0. */
export function parseSalt(v: string | number | undefined): bigint {
  if (v === undefined) return 0n
  const bad = () => invalidRequest('salt must be a uint256 as a decimal or 0x-hex string')
  let n: bigint
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v < 0) throw bad()
    n = BigInt(v)
  } else if (/^[0-9]{1,78}$/.test(v)) n = BigInt(v)
  else if (/^0x[0-9a-fA-F]{1,64}$/.test(v)) n = BigInt(v)
  else throw bad()
  if (n > MAX_UINT256) throw bad()
  return n
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  // A missing body is an empty one: the first missing field is then named.
  const obj = value ?? {}
  if (typeof obj !== 'object' || Array.isArray(obj)) throw invalidRequest(`${what} must be a JSON object`)
  const r = schema.safeParse(obj)
  if (!r.success) throw invalidRequest(r.error.issues[0]?.message ?? `invalid ${what}`)
  return r.data
}

/** A network named by a body or query parameter: unknown is a 400 naming the parameter. */
function networkParam(networks: NetworkRegistry, slug: string, name: string): Network {
  try {
    return networks.getBySlug(slug)
  } catch (err) {
    if (err instanceof HalyardError) throw invalidRequest(`${name}: ${err.message}`)
    throw err
  }
}

/** Spec 4.4: smart wallets, scoped `wallets:manage` (src/auth/scopes.ts), listed per calling key. */
export function registerWalletRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  wallets: WalletService,
) {
  app.post('/v1/wallets/create', async (request, reply) => {
    const body = parse(createBodySchema, request.body, 'the request body')
    const net = networkParam(networks, body.chain, 'chain')
    requireNetworkAccess(request.caller!, net)
    const salt = parseSalt(body.salt)
    const { wallet, created } = await wallets.create(
      request.caller!.keyId,
      net,
      toLowerAddress(body.owner),
      salt,
    )
    // A repeated create returns the same wallet: 200, not a duplicate.
    reply.code(created ? 201 : 200)
    return wallet
  })

  app.get('/v1/wallets/:address', async (request) => {
    const { address } = request.params as { address: string }
    const q = parse(listQuerySchema, request.query ?? {}, 'the query')
    const net = q.chain === undefined ? undefined : networkParam(networks, q.chain, 'chain')
    if (net) requireNetworkAccess(request.caller!, net)
    return wallets.get(request.caller!.keyId, addressParam(address, 'address'), net)
  })

  app.get('/v1/wallets', async (request) => {
    const page = parsePage(request.query, 25)
    const q = parse(listQuerySchema, request.query ?? {}, 'the query')
    const net = q.chain === undefined ? undefined : networkParam(networks, q.chain, 'chain')
    if (net) requireNetworkAccess(request.caller!, net)
    return wallets.list(request.caller!.keyId, page, net)
  })
}
