import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest } from '../errors.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import { parsePage } from '../tokens/pagination.ts'
import { addressParam } from '../tokens/routes.ts'
import { requireEvm } from '../tokens/service.ts'
import type { NftService } from './service.ts'

const MAX_UINT256 = 2n ** 256n - 1n

/** A token id: a decimal integer (or 0x hex) within uint256, or a 400 naming token_id. */
export function tokenIdParam(v: unknown): bigint {
  if (typeof v !== 'string' || !/^(\d{1,78}|0x[0-9a-fA-F]{1,64})$/.test(v))
    throw invalidRequest('token_id must be a decimal integer (or 0x hex) between 0 and 2^256-1')
  const id = BigInt(v)
  if (id > MAX_UINT256)
    throw invalidRequest('token_id must be a decimal integer (or 0x hex) between 0 and 2^256-1')
  return id
}

function refreshParam(query: unknown): boolean {
  const v = (query as Record<string, unknown> | undefined)?.refresh
  if (v === undefined || v === 'false') return false
  if (v === 'true') return true
  throw invalidRequest('refresh must be true or false')
}

/** Spec 4.3: NFT metadata, collection, owned NFTs. */
export function registerNftRoutes(app: FastifyInstance, networks: NetworkRegistry, nfts: NftService): void {
  const network = (request: FastifyRequest, chain: string) => {
    const net = networks.getBySlug(chain)
    requireNetworkAccess(request.caller!, net)
    requireEvm(net)
    return net
  }

  app.get('/v1/nfts/:chain/metadata/:contract/:token_id', async (request) => {
    const p = request.params as { chain: string; contract: string; token_id: string }
    const net = network(request, p.chain)
    const contract = addressParam(p.contract, 'contract')
    const tokenId = tokenIdParam(p.token_id)
    return nfts.metadata(net, contract, tokenId, refreshParam(request.query))
  })

  app.get('/v1/nfts/:chain/collection/:contract', async (request) => {
    const p = request.params as { chain: string; contract: string }
    const net = network(request, p.chain)
    return nfts.collection(net, addressParam(p.contract, 'contract'))
  })

  app.get('/v1/nfts/:chain/owned/:address', async (request) => {
    const p = request.params as { chain: string; address: string }
    const net = network(request, p.chain)
    const holder = addressParam(p.address, 'address')
    return nfts.owned(net, holder, parsePage(request.query, 50))
  })
}
