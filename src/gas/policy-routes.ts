import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { requireNetworkAccess, visibleTo } from '../http/access.ts'
import { idParam, pageQuery } from '../http/params.ts'
import { defineRoute } from '../http/route.ts'
import { createPolicySchema, POLICY_ID, type PolicyService, updatePolicySchema } from './policy-service.ts'

/**
 * `POST /gas/policies` plus list, read (with the spend so far), update and delete.
 * Wire shapes only; the service validates the rules. Policies belong to the caller's account:
 * another account's id is a 404, and so is a mainnet policy for a test key (visibleTo), which
 * lists leave out. Scope `gas:manage`.
 */

const policyId = idParam(
  'id',
  POLICY_ID,
  'a policy id (gp_ followed by 24 hex digits)',
  'gp_0123456789abcdef01234567',
)
const byId = z.object({ id: policyId })

/* Response bodies (a policy plus the spend so far), for the OpenAPI document. */
const policy = z.object({
  id: z.string().describe('The policy id (gp_…)').meta({ example: 'gp_0123456789abcdef01234567' }),
  name: z.string().describe('Its name').meta({ example: 'onboarding' }),
  chain: z.string().describe('The network slug it sponsors on').meta({ example: 'ethereum-devnet' }),
  rules: z.record(z.string(), z.unknown()).describe('Its rules, normalised (as in the request)'),
  status: z.string().describe('active or paused').meta({ example: 'active' }),
  created_at: z
    .string()
    .meta({ format: 'date-time' })
    .describe('When it was created')
    .meta({ example: '2026-11-26T10:00:00.000Z' }),
  updated_at: z
    .string()
    .meta({ format: 'date-time' })
    .describe('When it last changed')
    .meta({ example: '2026-11-26T10:00:00.000Z' }),
  spend: z
    .object({
      operations: z
        .number()
        .int()
        .describe('Operations signed and not released (reserved or settled)')
        .meta({ example: 3 }),
      settled_operations: z.number().int().describe('Operations settled on chain').meta({ example: 2 }),
      total_usd: z
        .string()
        .describe('Settled cost plus the maximum of signatures not yet settled, in USD')
        .meta({ example: '0.42' }),
      reserved_usd: z
        .string()
        .describe('The maximum cost of signatures not yet settled, in USD')
        .meta({ example: '0.14' }),
      settled_usd: z
        .string()
        .describe('The actual cost of settled operations, in USD')
        .meta({ example: '0.28' }),
      reserved_wei: z.string().describe('reserved_usd in wei').meta({ example: '40000000000000' }),
      settled_wei: z.string().describe('settled_usd in wei').meta({ example: '80000000000000' }),
    })
    .describe('What it has sponsored so far'),
})
const policyList = z.object({
  policies: z.array(policy).describe('Newest first'),
  page: z.number().int().describe('This page').meta({ example: 1 }),
  limit: z.number().int().describe('Policies per page').meta({ example: 25 }),
  total: z.number().int().describe('Policies in all pages').meta({ example: 1 }),
})

export function registerPolicyRoutes(
  app: FastifyInstance,
  networks: NetworkRegistry,
  policies: PolicyService,
) {
  const scoped = { scope: 'gas:manage', cost: 1, what: 'gas policies' } as const

  defineRoute(app, {
    ...scoped,
    method: 'POST',
    url: '/v1/gas/policies',
    summary: 'Create a gas policy',
    description:
      'A sponsorship policy of the account on one network: rules (allowed senders and contracts, per-operation, per-user and per-day ceilings, time window) that ERC-4337 operations must meet to be sponsored. Needs a paymaster signer configured on the server.',
    schema: { body: createPolicySchema },
    responses: { 201: policy },
    handler: async ({ caller, body, reply }) => {
      requireNetworkAccess(caller, networks.getBySlug(body.chain))
      const created = await policies.create(caller.accountId, body)
      reply.code(201)
      return created
    },
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/gas/policies',
    summary: 'List gas policies',
    description:
      "The account's sponsorship policies, newest first, paginated with `page` and `limit` (25 by default, 100 at most).",
    schema: { query: pageQuery(25) },
    responses: { 200: policyList },
    handler: ({ caller, query }) => policies.list(visibleTo(caller, networks), query),
  })

  defineRoute(app, {
    ...scoped,
    method: 'GET',
    url: '/v1/gas/policies/:id',
    summary: 'Get a gas policy',
    description: 'One policy of the account with its rules, status and what it has spent.',
    schema: { params: byId },
    responses: { 200: policy },
    handler: ({ caller, params }) => policies.get(visibleTo(caller, networks), params.id),
  })

  defineRoute(app, {
    ...scoped,
    method: 'PATCH',
    url: '/v1/gas/policies/:id',
    summary: 'Update a gas policy',
    description:
      "Changes a policy's name, rules or status (`active` or `paused`); send at least one. Applies to operations sponsored after it.",
    schema: { params: byId, body: updatePolicySchema },
    responses: { 200: policy },
    handler: ({ caller, params, body }) => policies.update(visibleTo(caller, networks), params.id, body),
  })

  defineRoute(app, {
    ...scoped,
    method: 'DELETE',
    url: '/v1/gas/policies/:id',
    summary: 'Delete a gas policy',
    description: 'Deletes the policy; operations already signed under it settle as usual.',
    schema: { params: byId },
    handler: ({ caller, params }) => policies.delete(visibleTo(caller, networks), params.id),
  })
}
