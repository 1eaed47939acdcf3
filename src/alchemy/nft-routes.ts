import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { Network } from '../chains/registry.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Charger } from '../http/charge.ts'
import { parseInput } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import type { IndexHistory } from '../indexer/history.ts'
import { stateCoverage } from '../indexer/index-coverage.ts'
import type { Address } from '../types.ts'
import * as P from './nft-params.ts'
import type { AlchemyNftApi } from './nft-service.ts'
import { ALCHEMY_NFT_V3, ALCHEMY_V2, alchemyRootParams } from './paths.ts'

/**
 * The NFT API v3 at the compat root, as alchemy-sdk calls it (`{url}/{method}`: under
 * `/alchemy/{network}/v2/{key}`) and as Alchemy's own NFT path (`/alchemy/{network}/nft/v3/{key}`).
 * One route per path and HTTP method; the method name in the path picks the handler.
 */

/** Compute units the gate charges per call: those of Halyard's NFT metadata route. */
const BASE_COST = 10

interface Method {
  /** Batches take a JSON body: a GET is refused, naming the method. */
  readonly postOnly?: boolean
  /** Compute units beyond BASE_COST, from the parsed input (lists as Halyard's owned route; batches per entry). */
  readonly extra: (input: never) => number
  readonly schema: z.ZodType
  readonly run: (api: AlchemyNftApi, net: Network, input: never) => Promise<unknown>
}

const method = <S extends z.ZodType>(m: {
  postOnly?: boolean
  schema: S
  extra?: (input: z.output<S>) => number
  run: (api: AlchemyNftApi, net: Network, input: z.output<S>) => Promise<unknown>
}): Method => ({ ...m, extra: m.extra ?? (() => 0) }) as Method

/** The methods served, by the exact name Alchemy uses (a Map: no inherited names such as `constructor`). */
const METHODS = new Map<string, Method>([
  [
    'getNFTsForOwner',
    method({ schema: P.forOwner, extra: () => 10, run: (a, n, p) => a.nftsForOwner(n, p) }),
  ],
  ['getNFTMetadata', method({ schema: P.nftMetadata, run: (a, n, p) => a.nftMetadata(n, p) })],
  [
    'getNFTMetadataBatch',
    method({
      postOnly: true,
      schema: P.nftMetadataBatch,
      extra: (p) => BASE_COST * (p.tokens.length - 1),
      run: (a, n, p) => a.nftMetadataBatch(n, p),
    }),
  ],
  ['getContractMetadata', method({ schema: P.contractMetadata, run: (a, n, p) => a.contractMetadata(n, p) })],
  [
    'getContractMetadataBatch',
    method({
      postOnly: true,
      schema: P.contractMetadataBatch,
      extra: (p) => BASE_COST * (p.contractAddresses.length - 1),
      run: (a, n, p) => a.contractMetadataBatch(n, p),
    }),
  ],
  [
    'getNFTsForContract',
    method({ schema: P.forContract, extra: () => 10, run: (a, n, p) => a.nftsForContract(n, p) }),
  ],
  ['getOwnersForNFT', method({ schema: P.ownersForNft, run: (a, n, p) => a.ownersForNft(n, p) })],
  [
    'getOwnersForContract',
    method({ schema: P.ownersForContract, extra: () => 10, run: (a, n, p) => a.ownersForContract(n, p) }),
  ],
])

/** The methods served, for documentation and tests. */
export const NFT_METHODS: readonly string[] = [...METHODS.keys()]

const params = alchemyRootParams.extend({
  method: z
    .string()
    .min(1)
    .max(64)
    .meta({ description: "The NFT API method, as in Alchemy's URLs", example: 'getNFTsForOwner' }),
})

export function registerAlchemyNftRoutes(
  app: FastifyInstance,
  deps: { api: AlchemyNftApi; charger: Charger; history: IndexHistory },
) {
  // `//`: alchemy-sdk joins `url + '/' + method`, so a url given with a trailing slash (which
  // the JSON-RPC root tolerates) sends the method after a double slash.
  const urls = [ALCHEMY_V2, ALCHEMY_NFT_V3].flatMap((root) => [`${root}/:method`, `${root}//:method`])
  for (const url of urls) {
    for (const verb of ['GET', 'POST'] as const) {
      defineRoute(app, {
        method: verb,
        url,
        scope: 'data:read',
        cost: BASE_COST,
        network: { from: 'alias', param: 'network', kinds: ['evm'] },
        keyInPath: 'apiKey',
        what: 'the Alchemy-compatible NFT API',
        summary: `Alchemy-compatible NFT API (${verb})`,
        description: `Alchemy's NFT API v3 methods by name in the path, answered from Halyard's index and NFT metadata cache: ${NFT_METHODS.join(', ')}. ${verb === 'GET' ? 'Parameters in the query.' : 'Parameters in a JSON body (the methods that take lists are POST only).'}`,
        schema: { params, query: P.alchemyQuery },
        responses: {
          200: z
            .record(z.string(), z.unknown())
            .describe("The method's answer as Alchemy's NFT API v3 shapes it (see its reference)"),
        },
        handler: async ({ params: p, query, body, network, request, reply, caller }) => {
          const m = METHODS.get(p.method)
          if (!m)
            throw notFound(
              `NFT API method ${JSON.stringify(p.method.slice(0, 64))} is not served by Halyard; served: ${NFT_METHODS.join(', ')}`,
            )
          if (m.postOnly && verb === 'GET')
            throw invalidRequest(`${p.method} takes a POST with a JSON body, as on Alchemy`)
          const raw = verb === 'POST' ? P.mergeParams(query, body) : query
          const input = parseInput(m.schema, raw, verb === 'POST' ? 'body' : 'query') as never
          const extra = m.extra(input)
          // Compute units only: the gate already counted the request.
          if (extra > 0) await deps.charger.charge(request, reply, extra, 0)
          // Alchemy's shape has no room for a field: the index headers say it (docs/data-apis.md).
          if (p.method === 'getNFTsForOwner') {
            const owner = (input as { owner: Address }).owner
            stateCoverage(reply, await deps.history.ofAddress(network, owner, caller.accountId))
          }
          return m.run(deps.api, network, input)
        },
      })
    }
  }
}
