import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { Caller } from '../auth/service.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { HalyardError, notFound } from '../errors.ts'
import { requireNetworkAccess } from '../http/access.ts'
import { address, pageQuery, uint256 } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import { addressProblem, toLowerAddress } from '../types.ts'
import type { WalletService } from './service.ts'

const createBodySchema = z.object({
  owner: z
    .string({ error: 'owner is required: the 0x-prefixed address of the owning account' })
    .superRefine((s, ctx) => {
      const problem = addressProblem(s)
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `owner ${problem}` })
      // Nobody holds the zero address's key: a wallet it owns could never sign anything.
      else if (BigInt(s) === 0n)
        ctx.addIssue({
          code: 'custom',
          message: 'owner must not be the zero address (no one can sign for it)',
        })
    })
    .meta({
      description: 'The address that will sign for the account',
      example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a',
    }),
  chain: z
    .string({ error: 'chain is required (a network slug such as ethereum-devnet)' })
    .min(1, 'chain is required')
    .meta({ description: 'The network slug', example: 'ethereum-devnet' }),
  /** Default 0; a small JSON integer is accepted too. */
  salt: uint256('salt', { jsonNumber: true })
    .optional()
    .describe('Distinguishes several wallets of one owner (a uint256); 0 when absent'),
})

/* Response bodies, for the OpenAPI document. */
const walletStatus = z.enum(['counterfactual', 'deployed'])
const createdWallet = z.object({
  address: z
    .string()
    .describe('The counterfactual account address')
    .meta({ example: '0x1f9090aae28b8a3dceadf281b0f12828e676c326' }),
  owner: z
    .string()
    .describe('The address that signs for the account')
    .meta({ example: '0xd8da6bf26964af9d7eed9e10c4a2c4f1e3cf3c6a' }),
  chain: z.string().describe('The network slug').meta({ example: 'ethereum-devnet' }),
  status: walletStatus.describe('deployed once its first UserOperation has been included'),
  factory: z
    .string()
    .describe('The account factory')
    .meta({ example: '0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985' }),
  created_at: z
    .string()
    .meta({ format: 'date-time', example: '2026-11-26T10:00:00.000Z' })
    .describe('When the key created it'),
})
const wallet = createdWallet.extend({
  nonce: z.number().int().optional().describe('once deployed').meta({ example: 3 }),
  deployed_at: z
    .string()
    .nullable()
    .optional()
    .describe('When it was deployed')
    .meta({ example: '2026-11-26T10:00:00.000Z' }),
  deploy_tx: z
    .string()
    .nullable()
    .optional()
    .describe('The transaction that deployed it')
    .meta({ example: '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060' }),
})
const walletList = z.object({
  wallets: z.array(createdWallet.omit({ factory: true })).describe('Newest first'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  total: z.number().int().describe('Wallets in all pages').meta({ example: 42 }),
})

const chainQuery = z
  .string({ error: 'chain must be a single network slug' })
  .min(1, 'chain must not be empty')
  .optional()
  .meta({ description: 'A network slug: only wallets on it', example: 'ethereum-devnet' })

/** A network named by a body or query parameter: unknown is a 404 naming the parameter. */
function networkParam(networks: NetworkRegistry, slug: string, name: string): Network {
  try {
    return networks.getBySlug(slug)
  } catch (err) {
    if (err instanceof HalyardError) throw notFound(`${name}: ${err.message}`)
    throw err
  }
}

/** Smart wallets, listed per calling key. */
export function registerWalletRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  wallets: WalletService,
) {
  const scoped = { scope: 'wallets:manage', what: 'smart wallets' } as const
  /** A network named by the optional `chain` query parameter, checked like a path's. */
  const queryNetwork = (caller: Caller, slug: string | undefined) => {
    if (slug === undefined) return undefined
    const net = networkParam(networks, slug, 'chain')
    requireNetworkAccess(caller, net)
    return net
  }

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/wallets/create',
    summary: 'Create a smart wallet',
    description:
      'Computes the counterfactual ERC-4337 account address for `owner` (and `salt`) on `chain` and records it for the calling key. Creating the same wallet again answers 200 with the same wallet instead of 201. Nothing is deployed: the account deploys with its first UserOperation. 5 CU.',
    cost: 5,
    schema: { body: createBodySchema },
    responses: { 200: createdWallet, 201: createdWallet },
    handler: async ({ caller, body, reply }) => {
      const net = networkParam(networks, body.chain, 'chain')
      requireNetworkAccess(caller, net)
      const { wallet, created } = await wallets.create(
        caller.keyId,
        net,
        toLowerAddress(body.owner),
        body.salt ?? 0n,
      )
      // A repeated create returns the same wallet: 200, not a duplicate.
      reply.code(created ? 201 : 200)
      return wallet
    },
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/wallets/:address',
    summary: 'Get a smart wallet',
    description:
      'One wallet the calling key created, with its deployment state on the network (`chain`, when it is on several). 404 when this key did not create it. 1 CU.',
    cost: 1,
    schema: { params: z.object({ address: address('address') }), query: z.object({ chain: chainQuery }) },
    responses: { 200: wallet },
    handler: ({ caller, params, query }) =>
      wallets.get(caller.keyId, params.address, queryNetwork(caller, query.chain)),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/wallets',
    summary: 'List smart wallets',
    description:
      'The wallets the calling key created, newest first, paginated with `page` and `limit` (25 by default, 100 at most), optionally on one `chain`. 1 CU.',
    cost: 1,
    schema: { query: pageQuery(25).extend({ chain: chainQuery }) },
    responses: { 200: walletList },
    handler: ({ caller, query }) =>
      wallets.list(caller.keyId, { page: query.page, limit: query.limit }, queryNetwork(caller, query.chain)),
  })
}
