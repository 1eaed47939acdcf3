import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { HalyardError, invalidRequest } from '../errors.ts'
import { requireNetworkAccess, visibleTo } from '../http/access.ts'
import { defineRoute } from '../http/route.ts'
import {
  type JsonRpcErrorObject,
  RPC_FORBIDDEN,
  RPC_INTERNAL_ERROR,
  RPC_INVALID_PARAMS,
  RPC_RATE_LIMITED,
} from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import { SponsorshipRefused } from './policy-checks.ts'
import { type SponsorService, sponsorBodySchema } from './sponsor-service.ts'

/**
 * Spec 4.6 `POST /gas/sponsor` (scope `gas:manage`), and the one mapping of sponsorship errors
 * to JSON-RPC for the ERC-7677 endpoint (paymaster-rpc.ts): -32602 for bad params or an unknown
 * policy, -32003 when a rule refuses (data.rule), -32005 with data.retryAfter for rate_limit and
 * max_per_user_per_day.
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

/** The one mapping of sponsorship errors to JSON-RPC error objects. */
export function paymasterRpcError(err: unknown, logger: Logger): JsonRpcErrorObject {
  if (err instanceof SponsorshipRefused) {
    if (err.code === 'rate_limited')
      return {
        code: RPC_RATE_LIMITED,
        message: err.message,
        data: { rule: err.rule, retryAfter: Number(err.headers['retry-after']) },
      }
    return { code: RPC_FORBIDDEN, message: err.message, data: { rule: err.rule } }
  }
  if (err instanceof HalyardError && (err.code === 'invalid_request' || err.code === 'not_found'))
    return { code: RPC_INVALID_PARAMS, message: err.message }
  logger.error({ err: (err as Error).message }, 'paymaster request failed')
  return { code: RPC_INTERNAL_ERROR, message: 'internal error' }
}
