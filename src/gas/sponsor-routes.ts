import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { invalidRequest } from '../errors.ts'
import { requireNetworkAccess, visibleTo } from '../http/access.ts'
import { defineRoute } from '../http/route.ts'
import { sponsorBodySchema } from './sponsor-body.ts'
import type { SponsorService } from './sponsor-service.ts'

/**
 * `POST /gas/sponsor` (scope `gas:manage`). On the ERC-7677 endpoint (paymaster-rpc.ts)
 * the same failures go through the JSON-RPC funnel (http/jsonrpc-errors.ts): -32602 for bad
 * params or an unknown policy, -32003 when a rule refuses (data.rule), -32005 with
 * data.retryAfter for rate_limit and max_per_user_per_day (SponsorshipRefused.jsonRpcError).
 */

export const NOT_CONFIGURED =
  'gas sponsorship is not configured: no paymaster signer key (HALYARD_PAYMASTER_KEY or HALYARD_PAYMASTER_KEY_FILE)'

/** `sponsor` is null when no paymaster signer is configured: every request is refused saying so. */
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/)
/** SponsorResult on the wire. */
const sponsored = z.object({
  paymaster: hex
    .describe('The paymaster contract, to put in the operation')
    .meta({ example: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512' }),
  paymasterData: hex
    .describe('The signed sponsorship, to put in the operation')
    .meta({ example: '0x0000000000000000000000000000000000000000000000000000000067a0f1c0' }),
  paymasterVerificationGasLimit: hex
    .describe('Gas for the paymaster to validate (hex)')
    .meta({ example: '0x186a0' }),
  paymasterPostOpGasLimit: hex.describe("Gas for the paymaster's postOp (hex)").meta({ example: '0xc350' }),
  sponsored_gas_usd: z
    .string()
    .nullable()
    .describe('The most the operation can cost in USD; null without a price')
    .meta({ example: '0.42' }),
  paymasterAndData: hex
    .optional()
    .describe('EntryPoint v0.6 only: paymaster and paymasterData in one field')
    .meta({
      example:
        '0xe7f1725e7734ce288f8367e1bb143e90bb3f05120000000000000000000000000000000000000000000000000000000067a0f1c0',
    }),
  entryPoint: hex
    .describe('The EntryPoint the sponsorship is for')
    .meta({ example: '0x0000000071727de22e5e9d8baf0edac6f37da032' }),
  validUntil: z
    .number()
    .int()
    .describe('Unix seconds after which the signature is refused')
    .meta({ example: 1767226200 }),
  validAfter: z
    .number()
    .int()
    .describe('Unix seconds before which the signature is refused')
    .meta({ example: 1767225600 }),
  sponsorship_id: z
    .string()
    .describe("Names this sponsorship in the policy's spend")
    .meta({ example: 'sp_0123456789abcdef01234567' }),
})

export function registerSponsorRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  sponsor: SponsorService | null,
) {
  defineRoute(app, {
    method: 'POST',
    url: '/v1/gas/sponsor',
    summary: 'Sponsor a UserOperation',
    description:
      "Checks a UserOperation against the policy's rules and, when they allow it, answers the paymaster fields (paymasterAndData for EntryPoint v0.6, paymaster and its data for v0.7) signed by the server's paymaster, reserving the operation's maximum cost against the policy's ceilings. 5 CU.",
    scope: 'gas:manage',
    cost: 5,
    what: 'gas sponsorship',
    responses: { 200: sponsored },
    schema: { body: sponsorBodySchema },
    handler: ({ caller, body }) => {
      requireNetworkAccess(caller, networks.getBySlug(body.chain))
      if (!sponsor) throw invalidRequest(NOT_CONFIGURED)
      return sponsor.sponsor(visibleTo(caller, networks), body)
    },
  })
}
