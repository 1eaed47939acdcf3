import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest } from '../errors.ts'
import { requireNetworkAccess, visibleTo } from '../http/access.ts'
import { defineRoute } from '../http/route.ts'
import { type SponsorService, sponsorBodySchema } from './sponsor-service.ts'

/**
 * `POST /gas/sponsor` (scope `gas:manage`). On the ERC-7677 endpoint (paymaster-rpc.ts)
 * the same failures go through the JSON-RPC funnel (http/jsonrpc-errors.ts): -32602 for bad
 * params or an unknown policy, -32003 when a rule refuses (data.rule), -32005 with
 * data.retryAfter for rate_limit and max_per_user_per_day (SponsorshipRefused.jsonRpcError).
 */

export const NOT_CONFIGURED =
  'gas sponsorship is not configured: no paymaster signer key (HALYARD_PAYMASTER_KEY or HALYARD_PAYMASTER_KEY_FILE)'

/** `sponsor` is null when no paymaster signer is configured: every request is refused saying so. */
export function registerSponsorRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  sponsor: SponsorService | null,
) {
  defineRoute(app, {
    method: 'POST',
    url: '/v1/gas/sponsor',
    scope: 'gas:manage',
    cost: 5,
    what: 'gas sponsorship',
    schema: { body: sponsorBodySchema },
    handler: ({ caller, body }) => {
      requireNetworkAccess(caller, networks.getBySlug(body.chain))
      if (!sponsor) throw invalidRequest(NOT_CONFIGURED)
      return sponsor.sponsor(visibleTo(caller, networks), body)
    },
  })
}
