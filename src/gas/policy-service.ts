import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Viewer } from '../http/access.ts'
import { addDecimal, normalizeDecimal } from './policy-decimal.ts'
import { rulesSchema } from './policy-rules.ts'
import type { PolicyRow, PolicyStore } from './policy-store.ts'

/**
 * Gas sponsorship policies (docs/gas.md): create, list, read with the spend so far,
 * update (name, rules, status active/paused), delete. Policies belong to an account; a viewer
 * (http/access.ts visibleTo) sees its account's on the networks it may see.
 */

/** A policy id as `create` mints it; anything else is refused before it reaches a query. */
export const POLICY_ID = /^gp_[0-9a-f]{24}$/
export const POLICY_ID_RULE = 'must be a policy id (gp_ followed by 24 hex digits)'

// PostgreSQL text cannot hold U+0000: refused here rather than failing the insert.
const policyName = (error: string) =>
  z
    .string({ error })
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    .refine((v) => !v.includes('\u0000'), 'must not contain a NUL character')
    .meta({ description: 'A name for the policy (at most 200 characters)', example: 'onboarding' })

export const createPolicySchema = z
  .object({
    name: policyName('is required and must be a string'),
    chain: z
      .string({ error: 'is required and must be a string' })
      .min(1, 'must not be empty')
      .max(64, 'must be a network slug (at most 64 characters)')
      .meta({ description: 'The network slug to sponsor on', example: 'ethereum-devnet' }),
    rules: rulesSchema.describe('What an operation must meet to be sponsored'),
  })
  .strict()

export const updatePolicySchema = z
  .object({
    name: policyName('must be a string').optional(),
    rules: rulesSchema.optional().describe('Replaces the rules'),
    status: z
      .enum(['active', 'paused'], { error: 'must be active or paused' })
      .optional()
      .meta({ description: 'paused sponsors nothing until active again', example: 'paused' }),
  })
  .strict()
  .refine((p) => p.name !== undefined || p.rules !== undefined || p.status !== undefined, {
    message: 'send at least one of name, rules, status',
  })

export const listPoliciesSchema = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(25),
})

export type CreatePolicy = z.input<typeof createPolicySchema>
export type UpdatePolicy = z.input<typeof updatePolicySchema>

export interface PolicySpend {
  /** Operations signed and not released (reserved or settled). */
  operations: number
  settled_operations: number
  /** Settled actual cost plus the maximum of signatures not yet settled. */
  total_usd: string
  reserved_usd: string
  settled_usd: string
  reserved_wei: string
  settled_wei: string
}

export interface PolicyView {
  id: string
  name: string
  chain: string
  rules: unknown
  status: string
  created_at: string
  updated_at: string
  spend: PolicySpend
}

function parse<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalidRequest(`${what} must be a JSON object`)
  const r = schema.safeParse(raw)
  if (!r.success) throw invalidRequest(describeZodError(r.error))
  return r.data
}

export function policyView(row: PolicyRow): PolicyView {
  return {
    id: row.id,
    name: row.name,
    chain: row.chain,
    rules: row.rules,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    spend: {
      operations: Number(row.ops_count),
      settled_operations: Number(row.settled_ops),
      total_usd: addDecimal(row.reserved_usd, row.settled_usd),
      reserved_usd: normalizeDecimal(row.reserved_usd),
      settled_usd: normalizeDecimal(row.settled_usd),
      reserved_wei: row.reserved_wei,
      settled_wei: row.settled_wei,
    },
  }
}

export class PolicyService {
  /** @param sponsors the network slugs sponsorship is configured on. */
  constructor(
    private readonly store: PolicyStore,
    private readonly sponsors: (chain: string) => boolean,
  ) {}

  async create(accountId: string, raw: unknown): Promise<PolicyView> {
    const input = parse(createPolicySchema, raw, 'body')
    if (!this.sponsors(input.chain))
      throw invalidRequest(`chain: gas sponsorship is not configured for ${input.chain}`)
    const row = await this.store.insert({
      id: `gp_${randomBytes(12).toString('hex')}`,
      account_id: accountId,
      name: input.name,
      chain: input.chain,
      rules: JSON.stringify(input.rules),
      status: 'active',
    })
    return policyView(row)
  }

  async get(viewer: Viewer, id: string): Promise<PolicyView> {
    const row = await this.store.get(viewer, id)
    if (!row) throw notFound(`policy ${id} not found`)
    return policyView(row)
  }

  async list(viewer: Viewer, rawQuery: unknown = {}) {
    const q = listPoliciesSchema.safeParse(rawQuery)
    if (!q.success) throw invalidRequest(describeZodError(q.error))
    const { page, limit } = q.data
    const { rows, total } = await this.store.list(viewer, limit, (page - 1) * limit)
    return { policies: rows.map(policyView), page, limit, total }
  }

  async update(viewer: Viewer, id: string, raw: unknown): Promise<PolicyView> {
    const patch = parse(updatePolicySchema, raw, 'body')
    const row = await this.store.update(viewer, id, {
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.rules !== undefined ? { rules: JSON.stringify(patch.rules) } : {}),
      ...(patch.status !== undefined ? { status: patch.status } : {}),
    })
    if (!row) throw notFound(`policy ${id} not found`)
    return policyView(row)
  }

  async delete(viewer: Viewer, id: string): Promise<{ id: string; deleted: true }> {
    if (!(await this.store.delete(viewer, id))) throw notFound(`policy ${id} not found`)
    return { id, deleted: true }
  }
}
