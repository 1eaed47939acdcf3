import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest } from '../errors.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import { type Address, isAddress, toLowerAddress } from '../types.ts'
import { parsePage } from './pagination.ts'
import { requireEvm, type TokenService } from './service.ts'

/** An address path/query parameter, lowercased, or a 400 naming it. */
export function addressParam(v: unknown, name: string): Address {
  if (!isAddress(v)) throw invalidRequest(`${name} must be a 0x-prefixed 20-byte hex address`)
  return toLowerAddress(v)
}

/** Spec 4.2: token balances and token metadata. */
export function registerTokenRoutes(app: FastifyInstance, networks: NetworkRegistry, tokens: TokenService) {
  app.get('/v1/tokens/:chain/balances/:address', async (request) => {
    const { chain, address } = request.params as { chain: string; address: string }
    const net = networks.getBySlug(chain)
    requireNetworkAccess(request.caller!, net)
    requireEvm(net)
    const holder = addressParam(address, 'address')
    const page = parsePage(request.query, 50)
    return tokens.balances(net, holder, page)
  })

  app.get('/v1/tokens/:chain/metadata/:contract', async (request) => {
    const { chain, contract } = request.params as { chain: string; contract: string }
    const net = networks.getBySlug(chain)
    requireNetworkAccess(request.caller!, net)
    requireEvm(net)
    return tokens.metadata(net, addressParam(contract, 'contract'))
  })
}
