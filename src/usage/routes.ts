import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { defineRoute } from '../http/route.ts'
import type { Storage } from '../storage/database.ts'
import { dayStart, readUsage, resolveRange } from './service.ts'

/** GET /v1/usage: the caller's account usage as JSON, for scripts (the dashboard reads the same service). */

const date = (name: string) =>
  z
    .string({ error: `${name}: must be a date as YYYY-MM-DD` })
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: `${name}: must be a date as YYYY-MM-DD` })
    .refine((v) => dayStart(v) !== undefined, { error: `${name}: is not a calendar day` })
    .meta({ example: '2026-01-31', format: 'date' })

export const usageQuery = z.object({
  from: date('from').optional().describe('First UTC day (included); default 29 days before `to`'),
  to: date('to').optional().describe('Last UTC day (included); default today'),
})

const counts = {
  requests: z
    .number()
    .int()
    .min(0)
    .describe('Requests admitted (a batch is one request)')
    .meta({ example: 1250 }),
  computeUnits: z.number().int().min(0).describe('Compute units charged').meta({ example: 31250 }),
  limited: z
    .number()
    .int()
    .min(0)
    .describe('Requests refused with 429 (not in requests)')
    .meta({ example: 3 }),
}

const limit = z.number().int().nullable().describe('null: unlimited')

export const usageResponse = z.object({
  account: z
    .object({
      id: z.string().describe('The account id').meta({ example: 'acct_0123456789abcdef01234567' }),
      email: z.string().describe('Its e-mail').meta({ example: 'ops@example.com' }),
    })
    .describe("The key's account"),
  plan: z
    .object({
      name: z.string().meta({ example: 'free' }).describe('The plan'),
      requestsPerSecond: limit.describe('Requests per second allowed; null: unlimited').meta({ example: 25 }),
      requestsPerDay: limit
        .describe('Requests per UTC day allowed; null: unlimited')
        .meta({ example: 100000 }),
      computeUnitsPerSecond: limit
        .describe('Compute units per second allowed; null: unlimited')
        .meta({ example: 330 }),
    })
    .describe("The account's plan and its limits"),
  from: z.string().meta({ format: 'date', example: '2026-01-01' }).describe('First UTC day reported'),
  to: z.string().meta({ format: 'date', example: '2026-01-30' }).describe('Last UTC day reported'),
  days: z
    .array(
      z.object({
        date: z.string().meta({ format: 'date', example: '2026-01-30' }).describe('The UTC day'),
        ...counts,
      }),
    )
    .describe('One entry per day, oldest first'),
  methodsDate: z
    .string()
    .meta({ format: 'date', example: '2026-01-30' })
    .describe('The day `methods` covers: `to`'),
  methods: z
    .array(
      z.object({
        method: z
          .string()
          .describe('JSON-RPC method, "batch", "ws …", or the REST route ("GET /v1/…")')
          .meta({ example: 'eth_call' }),
        ...counts,
      }),
    )
    .describe('Per method on methodsDate, most compute units first'),
})

export function registerUsageRoutes(app: FastifyInstance, storage: Storage): void {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/usage',
    summary: 'Usage of the account',
    description:
      "Requests and compute units of the calling key's account over a time range, per day or hour, per key and per method group, with the plan's limits. Any valid key may read it.",
    scope: 'any-key',
    cost: 1,
    what: 'usage',
    schema: { query: usageQuery },
    responses: { 200: usageResponse },
    handler: async ({ caller, query }) => {
      const range = resolveRange(query, Date.now())
      const report = await readUsage(storage, caller.accountId, range)
      return {
        account: { id: caller.accountId, email: caller.email },
        plan: { name: caller.plan, ...caller.limits },
        ...report,
      }
    },
  })
}
